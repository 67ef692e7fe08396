"""The simulator mechanism: repartitions (blackout and deadline shift), stepping API, snapshot, fork, no-MIG,
horizon, results and errors. Durations are (1g, 2g, 3g, 4g, 7g, full); P(u) = 40, 119, 160, 205.3, 243.9,
247.7, 248.5, 248.5 W."""

from __future__ import annotations

import json

import pytest

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.mig import MigSimulation, simulate
from wattsched.workload.job import Job, JobKind, Scaling

BIG = 9999.0


def job(
    name: str,
    arrival: float,
    deadline: float,
    *,
    d3: float = BIG,
    d4: float = BIG,
    d7: float = BIG,
    full: float = BIG,
) -> Job:
    return Job(name, arrival, deadline, JobKind.TRAINING, Scaling.MEASURED, (BIG, BIG, d3, d4, d7), full)


def _repartition_trace() -> list[Job]:
    # A: arrives 0, d 300; 100 s on 7g, 160 s on 4g, 240 s on 3g.
    # B: arrives 50, d 348; 300 s on 4g, 400 s on 3g.
    return [job("A", 0, 300, d3=240, d4=160, d7=100), job("B", 50, 348, d3=400, d4=300, d7=150)]


def _run_with_repartition_at_50(mode: str) -> tuple[MigSimulation, list[float]]:
    sim = MigSimulation(_repartition_trace(), 1, "edf-ss-restricted", record_jobs=True, repartition_mode=mode)
    epochs = []
    while sim.advance():
        epochs.append(sim.now_s)
        if sim.now_s == 50.0:
            assert sim.repartition(1) is False  # the current configuration: no-op
            assert sim.repartition(2) is True
    return sim, epochs


def test_repartition_blackout_costs_four_seconds_at_idle_power_and_preempts_running_jobs() -> None:
    # Config 1, restricted EDF-SS. t=0: A on 7g. t=50 (epoch): B arrives; d_B 348 > d_A 300, it waits.
    # Repartition to config 2 at t=50: A (half done) is preempted; B was waiting, so it is not. No slice for
    # [50, 54) at 40 W. t=54: A (d 300): 4g ends 134, 3g ends 54 + 120 = 174, both meet -> slowest: 3g.
    # B: 4g ends 354 > 348; preemption impossible (late everywhere) -> fastest free, 4g; 6 s late.
    # Epochs: 0, 50 (arrivals), 174 (A done), 354 (B done); the end of the blackout is not an epoch.
    # Energy: [0,50) u=7 248.5*50 + [50,54) 40*4 + [54,174) u=7 248.5*120 + [174,354) u=4 243.9*180
    #       = 12425 + 160 + 29820 + 43902 = 86307 J.
    sim, epochs = _run_with_repartition_at_50("blackout")
    result = sim.result()
    assert epochs == [0.0, 50.0, 174.0, 354.0]
    assert (result.repartitions, result.preemptions, result.blackout_s) == (1, 1, 4.0)
    assert result.energy_j == pytest.approx(86307.0)
    assert result.busy_time_s[0] == pytest.approx(4.0)
    records = {r.job_id: r for r in result.records or ()}
    assert records["A"].slices == ((0.0, 50.0, 1, 0), (54.0, 174.0, 2, 4))
    assert records["B"].slices == ((54.0, 354.0, 2, 0),)
    assert records["B"].tardiness_s == pytest.approx(6.0)
    assert result.avg_tardiness_s == pytest.approx(3.0)


def test_blackout_state_is_visible_at_the_epoch_and_arrivals_wait() -> None:
    sim = MigSimulation([job("A", 0, 300, d7=100, d4=160), job("B", 2, 900, d4=100)], 1, "edf-fs")
    assert sim.advance() and sim.now_s == 0.0
    sim.repartition(2)
    assert sim.in_blackout and sim.configuration.ident == 2
    with pytest.raises(RuntimeError):
        sim.repartition(3)
    # B arrives at 2 during the blackout: not an epoch. Next epoch: A (0 progress, 160 s on 4g) ends 164.
    assert sim.advance() and sim.now_s == pytest.approx(164.0)
    assert not sim.in_blackout


def test_repartition_deadline_shift_is_instant_and_moves_deadlines() -> None:
    # Same trace, deadline_shift: at t=50 A (preempted, 1) and B get deadlines 296 and 344, config 2 at once.
    # A: 3g ends 170 <= 296 (slowest that meets). B: 4g ends 350 > 344 -> fastest free 4g, 6 s late.
    # Energy: [0,50) 12425 + [50,170) u=7 248.5*120 + [170,350) u=4 243.9*180 = 86147 J; no blackout.
    sim, epochs = _run_with_repartition_at_50("deadline_shift")
    result = sim.result()
    assert epochs == [0.0, 50.0, 170.0, 350.0]
    assert (result.repartitions, result.preemptions, result.blackout_s) == (1, 1, 0.0)
    assert result.energy_j == pytest.approx(86147.0)
    records = {r.job_id: r for r in result.records or ()}
    assert (records["A"].deadline_s, records["B"].deadline_s) == (296.0, 344.0)
    assert records["B"].tardiness_s == pytest.approx(6.0)


@pytest.mark.parametrize("mode", ["blackout", "deadline_shift"])
def test_a_job_placed_at_the_instant_of_a_repartition_is_not_preempted(mode: str) -> None:
    # Config 2 (4g, 3g), EDF-FS. t=0: A on 4g (160 s). t=50: B arrives and is placed on the free 3g; the
    # repartition to config 1 at that same epoch takes both off: A ran 50 s (one preemption), B never ran
    # (none). A then has 110/160 of its work left: 68.75 s on 7g, from 54 (blackout) or 50 (deadline shift).
    trace = [job("A", 0, 300, d3=240, d4=160, d7=100), job("B", 50, 900, d3=300, d4=200, d7=100)]
    sim = MigSimulation(trace, 2, "edf-fs", record_jobs=True, repartition_mode=mode)
    while sim.advance():
        if sim.now_s == 50.0:
            assert sim.snapshot().jobs[1].slice_index is not None  # B is on a slice at the change
            assert sim.repartition(1) is True
    result = sim.result()
    restart = 54.0 if mode == "blackout" else 50.0
    records = {r.job_id: r for r in result.records or ()}
    assert (records["A"].preemptions, records["B"].preemptions, result.preemptions) == (1, 0, 1)
    assert records["A"].slices == ((0.0, 50.0, 2, 0), (restart, restart + 68.75, 1, 0))
    assert records["B"].slices == ((restart + 68.75, restart + 168.75, 1, 0),)


def test_snapshot_reports_jobs_energy_and_accrued_lateness() -> None:
    # Config 1. X: arrives 0, d 10, 100 s. Y: arrives 50, d 500, 100 s. At the epoch t=50: X has run 50 s
    # (half left) and is 40 s past its deadline; Y waits. Energy 248.5 * 50.
    jobs = [job("X", 0, 10, d7=100, d4=200), job("Y", 50, 500, d7=100, d4=200)]
    sim = MigSimulation(jobs, 1, "edf-ss-restricted")
    sim.advance()
    sim.advance()
    snap = sim.snapshot()
    assert snap.now_s == 50.0 and snap.configuration == 1 and not snap.in_blackout
    assert [v.job_id for v in snap.jobs] == ["X", "Y"]
    x, y = snap.jobs
    assert (x.remaining_fraction, x.slice_index, y.remaining_fraction, y.slice_index) == (0.5, 0, 1.0, None)
    assert x.remaining_s[4] == pytest.approx(50.0) and x.remaining_s[3] == pytest.approx(100.0)
    assert snap.energy_j == pytest.approx(248.5 * 50)
    assert snap.accrued_tardiness_s == pytest.approx(40.0)
    assert sim.accrued_tardiness_s == pytest.approx(40.0)


def test_fork_is_independent() -> None:
    sim = MigSimulation(_repartition_trace(), 1, "edf-ss-restricted")
    sim.advance()
    sim.advance()
    look = sim.fork()
    look.repartition(3)
    forked = look.run()
    plain = sim.run()
    reference = simulate(_repartition_trace(), 1, "edf-ss-restricted")
    assert plain == reference
    assert forked.repartitions == 1 and plain.repartitions == 0


def test_fork_of_the_arrived_jobs_knows_no_future_arrival() -> None:
    # At the first epoch (t = 0) only A has arrived: the fork runs as if B never came (A alone: 100 s on 7g),
    # and the real run still gets B.
    sim = MigSimulation(_repartition_trace(), 1, "edf-ss-restricted", horizon_s=500.0)
    sim.advance()
    look = sim.fork(arrived_only=True)
    assert look.pending_arrivals == 0 and sim.pending_arrivals == 1
    alone = look.run()
    assert alone == simulate(_repartition_trace()[:1], 1, "edf-ss-restricted", horizon_s=500.0)
    assert alone.jobs == 1 and alone.energy_j == pytest.approx(248.5 * 100 + 40 * 400)
    assert alone.avg_tardiness_s == 0.0
    assert sim.run() == simulate(_repartition_trace(), 1, "edf-ss-restricted", horizon_s=500.0)


def test_fork_of_the_arrived_jobs_takes_sampled_arrivals() -> None:
    # The fork at t = 0 given B (a planner's sample) runs exactly like the whole trace.
    sim = MigSimulation(_repartition_trace(), 1, "edf-ss-restricted")
    sim.advance()
    look = sim.fork(arrived_only=True)
    look.add_job(_repartition_trace()[1])
    assert look.run() == simulate(_repartition_trace(), 1, "edf-ss-restricted")


def test_snapshot_fork_is_refused_once_the_epoch_is_left() -> None:
    sim = MigSimulation(_repartition_trace(), 1, "edf-ss-restricted")
    sim.advance()
    snap = sim.snapshot()
    assert snap.fork_arrived is not None
    assert snap.fork_arrived().pending_arrivals == 0
    sim.advance()
    with pytest.raises(RuntimeError, match="moved past"):
        snap.fork_arrived()


def test_no_mig_uses_the_full_gpu_duration_and_p7() -> None:
    # One job, 90 s with MIG disabled (100 s on 7g). Busy at P(7) = 248.5 W for 90 s; horizon 200 adds
    # 110 s idle at 40 W.
    result = simulate([job("A", 0, 1000, d7=100, full=90)], "no-mig", "edf-ss", horizon_s=200.0)
    assert result.end_s == 200.0
    assert result.busy_time_s == (110.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 90.0)
    assert result.energy_j == pytest.approx(248.5 * 90 + 40 * 110)


def test_default_horizon_is_the_last_arrival_and_idle_gaps_cost_p0() -> None:
    # A runs 0..100 on 7g; B arrives at 300 and runs 300..400. Idle [100, 300) at 40 W.
    result = simulate([job("A", 0, 1000, d7=100), job("B", 300, 1000, d7=100)], 1, "llf")
    assert result.end_s == 400.0
    assert result.energy_j == pytest.approx(248.5 * 200 + 40 * 200)


def test_records_follow_trace_order_and_ties_follow_row_order() -> None:
    # Same arrival and deadline: row order decides. Config 1: "second" (row 0) runs first.
    jobs = [job("second", 0, 100, d7=10), job("first", 0, 100, d7=10)]
    result = simulate(jobs, 1, "edf-fs", record_jobs=True)
    records = result.records or ()
    assert [r.job_id for r in records] == ["second", "first"]
    assert [r.start_s for r in records] == [0.0, 10.0]


def test_result_to_dict_is_json_and_has_contract_keys() -> None:
    result = simulate(_repartition_trace(), 3, "edf-ss")
    data = result.to_dict()
    json.dumps(data)
    for key in (
        "energy_j",
        "avg_tardiness_s",
        "max_tardiness_s",
        "jobs",
        "late_jobs",
        "preemptions",
        "repartitions",
        "end_s",
        "busy_time_s",
        "blackout_s",
    ):
        assert key in data
    assert sum(data["busy_time_s"]) == pytest.approx(data["end_s"])  # type: ignore[arg-type]


def test_empty_trace() -> None:
    result = simulate([], 3, "edf-ss", horizon_s=10.0)
    assert (result.jobs, result.energy_j, result.avg_tardiness_s, result.end_s) == (0, 400.0, 0.0, 10.0)


def test_errors() -> None:
    with pytest.raises(UnknownNameError, match="edf-ss-restricted"):
        simulate([], 3, "fifo")
    with pytest.raises(ConfigError):
        simulate([], 13, "edf-ss")
    with pytest.raises(ConfigError):
        MigSimulation([], 3, "edf-ss", repartition_mode="teleport")  # type: ignore[arg-type]
    sim = MigSimulation(_repartition_trace(), 3, "edf-ss")
    with pytest.raises(RuntimeError):
        sim.result()


@pytest.mark.parametrize("policy", ["edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"])
def test_arrivals_within_one_instant_of_a_later_completion_join_that_instant(policy: str) -> None:
    # Found by hypothesis: A's completion lands at 309.00000000000006, 6e-14 s after B and C arrive at 309.0.
    # The three events are one instant at its latest time; C (queued behind B) must join it rather than be
    # scheduled before the clock. On cfg 1 the 7g slice then takes B (earlier row, same deadline), then C.
    a_7g = 309.00000000000006
    jobs = [job("A", 0.0, 400.0, d7=a_7g), job("B", 309.0, 320.0, d7=5.0), job("C", 309.0, 320.0, d7=5.0)]
    result = simulate(jobs, 1, policy, record_jobs=True)
    assert result.records is not None
    done = {r.job_id: r for r in result.records}
    assert done["A"].completion_s == a_7g
    assert done["B"].start_s == a_7g and done["B"].completion_s == a_7g + 5.0
    assert done["C"].start_s == a_7g + 5.0 and done["C"].completion_s == a_7g + 10.0
    assert result.preemptions == 0
