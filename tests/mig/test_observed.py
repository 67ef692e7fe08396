"""The observed-events mode: a simulation told what really happened (arrivals, starts, completions,
requeues) and asked for the decision, as a controller of a real GPU uses it.

Told exactly what it predicts, it reproduces ``simulate`` bit for bit; told something else (a job ending early
or late, a start on another slice, a requeue), it re-plans from what it was told."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import CONFIGS, traces

from wattsched.mig import POLICIES, MigSimulation, simulate
from wattsched.workload.job import Job, JobKind, Scaling

EPS_S = 1e-9


def _told_its_predictions(
    jobs: list[Job], config: int | str, policy: str, power_cap: bool = False
) -> MigSimulation:
    """Drive a simulation as a controller would if the world did exactly what the model predicts: report
    the arrivals and the predicted completions of each instant, ask for the decision, report the starts."""
    sim = MigSimulation([], config, policy, record_jobs=True, power_cap=power_cap)
    pending = sorted(jobs, key=lambda j: j.arrival_s)  # stable: (arrival, row), as simulate orders them
    i = 0
    started: dict[int, int] = {}
    while True:
        next_arrival = pending[i].arrival_s if i < len(pending) else math.inf
        t = min(next_arrival, sim.next_event_s())
        if t == math.inf:
            break
        while i < len(pending) and pending[i].arrival_s <= t + EPS_S:
            sim.observe_arrival(pending[i])
            i += 1
        for rank, end_s in sim.predicted_completions().items():
            if end_s <= t + EPS_S:
                sim.observe_completion(rank, end_s)
        assignment = sim.decide(t)
        for slice_index, rank in enumerate(assignment):
            if rank >= 0 and started.get(rank) != slice_index:
                sim.observe_start(rank, slice_index, t)  # what the model planned: changes nothing
                started[rank] = slice_index
    last = max((j.arrival_s for j in jobs), default=0.0)
    sim.finish(last)
    return sim


@settings(max_examples=60, deadline=None)
@given(traces(), st.sampled_from(CONFIGS), st.sampled_from(POLICIES.available()))
def test_told_its_own_predictions_it_reproduces_simulate(
    jobs: list[Job], config: int | str, policy: str
) -> None:
    expected = simulate(jobs, config, policy, record_jobs=True)
    got = _told_its_predictions(jobs, config, policy).result()
    assert got.to_dict() == expected.to_dict()
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, i))
    assert got.records == tuple(expected.records[i] for i in order)  # type: ignore[index]


@settings(max_examples=20, deadline=None)
@given(traces(), st.sampled_from(CONFIGS), st.sampled_from(["edf-ss-restricted", "llf"]))
def test_told_its_own_predictions_with_a_power_cap(jobs: list[Job], config: int | str, policy: str) -> None:
    expected = simulate(jobs, config, policy, record_jobs=True, power_cap=True)
    got = _told_its_predictions(jobs, config, policy, power_cap=True).result()
    assert got.to_dict() == expected.to_dict()


def _job(name: str, arrival_s: float, dur_full_s: float, deadline_s: float) -> Job:
    # linear scaling on the A100-40GB's compute sizes 1, 2, 3, 4, 7: duration on g slices = 7·dur_full/g,
    # and the whole GPU (no-mig) runs it in dur_full.
    sizes = (1, 2, 3, 4, 7)
    return Job(
        name,
        arrival_s,
        deadline_s,
        JobKind.TRAINING,
        Scaling.LINEAR,
        tuple(dur_full_s * 7 / g for g in sizes),
        dur_full_s,
        sizes,
    )


def test_a_job_finishing_early_frees_its_slice_for_the_next() -> None:
    # no-mig: one 7g slice; a (100 s) runs from 0, b waits. a really ends at 40 s: b starts at 40, not 100.
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    b = sim.observe_arrival(_job("b", 0.0, 100.0, 2000.0))
    assert list(sim.decide(0.0)) == [a]
    assert sim.predicted_completions() == {a: 100.0}
    sim.observe_completion(a, 40.0)
    assert list(sim.decide(40.0)) == [b]
    assert sim.predicted_completions() == {b: 140.0}


def test_a_job_finishing_late_holds_its_slice_until_it_is_reported() -> None:
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    b = sim.observe_arrival(_job("b", 0.0, 100.0, 2000.0))
    sim.decide(0.0)
    # 150 s and a has not been reported finished: still running, predicted to end overdue_s later.
    sim.overdue_s = 5.0
    assert list(sim.decide(150.0)) == [a]
    assert sim.predicted_completions() == {a: 155.0}
    assert list(sim.decide(170.0)) == [a]
    assert sim.predicted_completions() == {a: 175.0}
    sim.observe_completion(a, 172.0)
    assert list(sim.decide(172.0)) == [b]
    assert sim.predicted_completions() == {b: 272.0}
    sim.observe_completion(b, 272.0)
    sim.decide(272.0)
    sim.finish()
    result = sim.result()
    assert result.jobs == 2 and result.late_jobs == 0 and result.preemptions == 0


def test_a_start_on_another_slice_moves_the_plan() -> None:
    # Configuration with two slices of the same size: the real scheduler put the job on the other one.
    gpu = MigSimulation([], 1, "edf-ss-restricted").gpu
    config = next(
        c
        for c in gpu.configurations
        if len(c.slices) >= 2 and len({s.compute for s in c.slices}) < len(c.slices)
    )
    sim = MigSimulation([], config, "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 10_000.0))
    plan = list(sim.decide(0.0))
    planned = plan.index(a)
    other = next(
        s
        for s, slc in enumerate(config.slices)
        if s != planned and slc.compute == config.slices[planned].compute
    )
    sim.observe_start(a, other, 2.0)
    assignment = list(sim.decide(2.0))
    assert assignment[other] == a and assignment[planned] == -1
    compute = config.slices[other].compute
    assert sim.predicted_completions()[a] == pytest.approx(2.0 + 100.0 * 7 / compute)
    assert sim.snapshot().preemptions == 0  # the planned start never ran: not a preemption


def test_a_requeued_job_waits_with_its_remaining_work_and_is_placed_again() -> None:
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    sim.decide(0.0)
    sim.observe_requeue(a, 30.0, remaining=0.5)  # checkpointed at half its work
    assert list(sim.decide(30.0)) == [a]  # the only job: placed again at once
    assert sim.predicted_completions() == {a: 80.0}
    assert sim.snapshot().preemptions == 1
    sim.observe_completion(a, 80.0)
    sim.decide(80.0)
    sim.finish()
    assert sim.result().records is None and sim.result().preemptions == 1


def test_observations_refuse_what_cannot_be() -> None:
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    b = sim.observe_arrival(_job("b", 0.0, 100.0, 1000.0))
    sim.decide(0.0)
    with pytest.raises(ValueError, match="report its start first"):
        sim.observe_completion(b, 10.0)
    with pytest.raises(ValueError, match="slice 3 is not one of the 1 slices"):
        sim.observe_start(b, 3, 10.0)
    with pytest.raises(ValueError, match=r"fraction in \(0, 1\]"):
        sim.observe_requeue(a, 10.0, remaining=1.5)
    with pytest.raises(ValueError, match="overdue_s"):
        sim.overdue_s = 0.0


def test_an_observed_fork_is_independent() -> None:
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    sim.decide(0.0)
    fork = sim.fork()
    fork.observe_completion(a, 10.0)
    fork.decide(10.0)
    assert fork.predicted_completions() == {}
    assert sim.predicted_completions() == {a: 100.0}


def test_a_cancelled_waiting_job_leaves_the_queue() -> None:
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    b = sim.observe_arrival(_job("b", 0.0, 100.0, 50.0))  # earlier deadline: runs first
    c = sim.observe_arrival(_job("c", 0.0, 100.0, 2000.0))
    assert list(sim.decide(0.0)) == [b]
    sim.observe_cancel(a, 20.0)
    sim.observe_completion(b, 100.0)
    assert list(sim.decide(100.0)) == [c]
    sim.observe_completion(c, 200.0)
    sim.decide(200.0)
    sim.finish()
    result = sim.result()
    assert result.jobs == 3 and result.late_jobs == 1  # b, 50 s late; a counts as on time
    assert result.avg_tardiness_s == pytest.approx(50.0 / 3)


def test_a_job_predicted_to_end_at_the_decision_time_is_not_ended_unreported() -> None:
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    sim.decide(0.0)
    sim.overdue_s = 5.0
    assert list(sim.decide(100.0)) == [a]  # predicted to end exactly now: not reported yet
    assert sim.predicted_completions() == {a: 105.0}


def test_a_start_reported_after_the_predicted_end_keeps_the_job_running() -> None:
    # Released at 0 (planned start), Slurm started it only at 150, after its predicted end at 100.
    sim = MigSimulation([], "no-mig", "edf-ss-restricted")
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    sim.decide(0.0)
    sim.overdue_s = 1.0
    for t in (50.0, 100.0, 120.0):
        assert list(sim.decide(t)) == [a]
    sim.observe_start(a, 0, 150.0)  # where the model already runs it: its planned start stands
    sim.observe_completion(a, 250.0)
    assert list(sim.decide(250.0)) == [-1]


def test_an_observation_re_plans_an_overdue_job_with_the_simulations_overdue_time() -> None:
    # Configuration 2 (4g + 3g): a runs on the 4g slice from 0, predicted to end at 100·7/4 = 175 s. At 200 s
    # it has not been reported finished: overdue, re-planned 3 s later (the simulation's overdue_s). At 210 s
    # a requeue of b is reported: before handling it the model re-plans a again, 3 s after 210 — observations
    # use the same overdue_s as decisions.
    sim = MigSimulation([], 2, "edf-ss-restricted")
    sim.overdue_s = 3.0
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 180.0))
    sim.decide(0.0)
    assert sim.predicted_completions()[a] == pytest.approx(100.0 * 7 / 4)
    b = sim.observe_arrival(_job("b", 200.0, 100.0, 100_000.0))
    sim.decide(200.0)
    assert sim.predicted_completions()[a] == pytest.approx(203.0)
    sim.observe_requeue(b, 210.0)
    assert sim.predicted_completions()[a] == pytest.approx(213.0)


class _HeldLevel:
    """A clock governor that keeps the level it is told (as a controller that sets the clock gives)."""

    speed = (1.0, 0.5)
    power_scale = (1.0, 0.5)
    initial_level = 0
    level = 0

    def level_for(self, slack_ratio: float) -> int:
        return self.level


def test_a_clock_level_told_re_times_the_running_job() -> None:
    governor = _HeldLevel()
    sim = MigSimulation([], "no-mig", "edf-ss-restricted", clock=governor)
    a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
    sim.decide(0.0)
    assert sim.predicted_completions() == {a: 100.0}
    # At 40 s, 60 % is left; at half speed it takes 120 s more: 160 s.
    governor.level = 1
    sim.observe_clock_level(1, 40.0)
    assert sim.clock_level == 1
    assert sim.predicted_completions()[a] == pytest.approx(160.0)
    # Back to full speed at 100 s: 60 s at half speed did 30 %, 30 % is left: 130 s.
    governor.level = 0
    sim.observe_clock_level(0, 100.0)
    assert sim.predicted_completions()[a] == pytest.approx(130.0)
    sim.observe_completion(a, 130.0)
    sim.decide(130.0)
    sim.finish()
    assert sim.time_by_clock_level() == pytest.approx((70.0, 60.0))
    with pytest.raises(ValueError, match="not one of the governor's 2 levels"):
        sim.observe_clock_level(2, 130.0)
    without = MigSimulation([], "no-mig", "edf-ss-restricted")
    with pytest.raises(ValueError, match="no clock levels"):
        without.observe_clock_level(0, 0.0)


def test_a_pinned_job_keeps_its_slice_where_the_policy_would_preempt_it() -> None:
    # no-mig, preemptive EDF-FS: a (100 s, deadline 1000) runs from 0; b (deadline 150) arrives at 10. The
    # policy preempts a for b; pinned, a keeps the GPU, b starts when a is reported done at 100.
    for pinned in (False, True):
        sim = MigSimulation([], "no-mig", "edf-fs")
        a = sim.observe_arrival(_job("a", 0.0, 100.0, 1000.0))
        if pinned:
            sim.pin(a)
        assert list(sim.decide(0.0)) == [a]
        b = sim.observe_arrival(_job("b", 10.0, 100.0, 150.0), 10.0)
        if not pinned:
            assert list(sim.decide(10.0)) == [b] and sim.snapshot().preemptions == 1
            continue
        assert list(sim.decide(10.0)) == [a] and sim.predicted_completions() == {a: 100.0}
        sim.observe_completion(a, 100.0)
        assert list(sim.decide(100.0)) == [b] and sim.predicted_completions() == {b: 200.0}
        assert sim.snapshot().preemptions == 0
    with pytest.raises(ValueError, match="no job rank 5"):
        MigSimulation([], "no-mig", "edf-fs").pin(5)


def _pinned_run(jobs: list[Job], config: int | str, policy: str) -> MigSimulation:
    """As :func:`_told_its_predictions`, with every job pinned on arrival."""
    sim = MigSimulation([], config, policy)
    pending = sorted(jobs, key=lambda j: j.arrival_s)
    i = 0
    while True:
        t = min(pending[i].arrival_s if i < len(pending) else math.inf, sim.next_event_s())
        if t == math.inf:
            break
        while i < len(pending) and pending[i].arrival_s <= t + EPS_S:
            sim.pin(sim.observe_arrival(pending[i]))
            i += 1
        for rank, end_s in sim.predicted_completions().items():
            if end_s <= t + EPS_S:
                sim.observe_completion(rank, end_s)
        sim.decide(t)
    sim.finish(max((j.arrival_s for j in jobs), default=0.0))
    return sim


@settings(max_examples=40, deadline=None)
@given(traces(), st.sampled_from(CONFIGS), st.sampled_from(POLICIES.available()))
def test_with_every_job_pinned_no_policy_preempts_and_every_job_finishes(
    jobs: list[Job], config: int | str, policy: str
) -> None:
    result = _pinned_run(jobs, config, policy).result()
    assert result.preemptions == 0 and result.jobs == len(jobs)
