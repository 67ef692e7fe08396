"""The engine's driving API (add_job, step, finish, compact), its long-queue layout and the clock hook: each
gives exactly the run ``simulate`` gives."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_properties import CONFIGS, traces

from wattsched.mig import POLICIES, MigSimulation, _state, simulate
from wattsched.mig import simulator as simulator_module
from wattsched.sim import sorted_list
from wattsched.sim.sorted_list import BlockedSortedList
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling


def _driven(
    jobs: list[Job], config: int | str, policy: str, compact_every: int = 0, horizon_s: float | None = None
) -> MigSimulation:
    """Give the jobs one at a time, stepping as a cluster does: every instant that starts more than 1 ns
    before the next arrival, then the arrival."""
    sim = MigSimulation([], config, policy, record_jobs=True)
    ordered = sorted(jobs, key=lambda j: j.arrival_s)  # stable: (arrival, row), as simulate orders them
    for job in ordered:
        while sim.next_event_s(job.arrival_s) + 1e-9 < job.arrival_s:
            sim.step()
            if compact_every and sim.completed_jobs % compact_every == 0:
                sim.compact()
        sim.add_job(job)
    while sim.step() is not None:
        if compact_every:
            sim.compact()
    last = max((j.arrival_s for j in jobs), default=0.0)
    sim.finish(last if horizon_s is None else horizon_s)
    return sim


@given(traces(), st.sampled_from(CONFIGS), st.sampled_from(POLICIES.available()), st.sampled_from([0, 1, 3]))
def test_jobs_given_one_by_one_run_as_simulate(
    jobs: list[Job], config: int | str, policy: str, compact_every: int
) -> None:
    expected = simulate(jobs, config, policy, record_jobs=True)
    sim = _driven(jobs, config, policy, compact_every)
    got = sim.result()
    assert got.to_dict() == expected.to_dict()
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, i))
    assert got.records == tuple(expected.records[i] for i in order)  # type: ignore[index]
    finished = sim.finished_jobs()
    assert sorted(finished.rows) == list(range(len(jobs)))
    for row, tardiness in zip(finished.rows, finished.tardiness_s, strict=True):
        assert tardiness == got.records[row].tardiness_s  # type: ignore[index]


@pytest.fixture
def tiny_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch to the blocked layout from 3 waiting jobs on (back below 2), so short tests exercise it."""
    for module in (simulator_module, _state, sorted_list):
        monkeypatch.setattr(module, "LARGE", 3, raising=False)
    for module in (_state, sorted_list):
        monkeypatch.setattr(module, "SMALL", 2, raising=False)


@pytest.mark.usefixtures("tiny_queues")
@pytest.mark.parametrize("policy", POLICIES.available())
def test_long_queue_layout_gives_the_same_run(policy: str) -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=4.0, hours=3.0), 11)  # overloaded: hundreds wait
    seen: list[type] = []
    sim = MigSimulation(jobs, 3, policy, record_jobs=True)
    while sim.advance():
        seen.append(type(sim._state.waiting))
    assert BlockedSortedList in seen and list in seen
    blocked = sim.result()
    for module, name, value in (
        (simulator_module, "LARGE", 2048),
        (_state, "LARGE", 2048),
        (_state, "SMALL", 512),
    ):
        setattr(module, name, value)
    assert simulate(jobs, 3, policy, record_jobs=True) == blocked


def test_fork_after_add_job_is_independent() -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=2.0), 4)
    sim = MigSimulation([], 3, "llf", record_jobs=True)
    for job in jobs[:40]:
        while sim.next_event_s(job.arrival_s) + 1e-9 < job.arrival_s:
            sim.step()
        sim.add_job(job)
    other = sim.fork()
    for job in jobs[40:]:
        sim.add_job(job)
    while sim.step() is not None:
        pass
    sim.finish(jobs[-1].arrival_s)
    while other.step() is not None:
        pass
    other.finish()
    assert sim.result().jobs == len(jobs) and other.result().jobs == 40
    assert simulate(jobs, 3, "llf", horizon_s=jobs[-1].arrival_s).to_dict() == sim.result().to_dict()


def test_add_job_refuses_what_it_cannot_do() -> None:
    job = Job("a", 10.0, 20.0, JobKind.INFERENCE, Scaling.LINEAR, (7.0, 3.5, 7 / 3, 1.75, 1.0), 1.0)
    sim = MigSimulation([], 3, "edf-fs")
    sim.add_job(job)
    with pytest.raises(ValueError, match="before the clock"):
        sim.add_job(job, arrival_s=5.0)
    with pytest.raises(ValueError, match="finite"):
        sim.add_job(job, arrival_s=math.inf)
    assert sim.pending_arrivals == 1 and sim.jobs_in_system == 1
    with pytest.raises(RuntimeError, match="pending"):
        sim.finish()
    while sim.step() is not None:
        pass
    sim.finish(100.0)
    assert sim.result().end_s == 100.0 and sim.jobs_in_system == 0
    with pytest.raises(RuntimeError, match="finished"):
        sim.add_job(job, arrival_s=200.0)


class _HalfSpeed:
    """A one-level governor: every job runs at half speed, busy power above idle at 0.8."""

    speed = (0.5,)
    power_scale = (0.8,)
    initial_level = 0

    def level_for(self, slack_ratio: float) -> int:
        return 0


class _ThreeLevels:
    """A governor that slows down when the tightest running job has slack: levels 0 (full), 1 and 2."""

    speed = (1.0, 0.8, 0.6)
    power_scale = (1.0, 0.7, 0.5)
    initial_level = 0

    def level_for(self, slack_ratio: float) -> int:
        return 0 if slack_ratio < 1.5 else 1 if slack_ratio < 3.0 else 2


@pytest.mark.parametrize("clock", [None, _ThreeLevels()], ids=["no-clock", "three-levels"])
def test_energy_so_far_is_power_times_busy_time_over_every_state(clock: object) -> None:
    """At every epoch, energy_j (which visits only the states entered) equals the sum over the whole table:
    per clock level, Σ power × busy time over its states, the levels added in order."""
    jobs = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=4.0), 3)
    sim = MigSimulation(jobs, 3, "edf-ss", clock=clock)  # type: ignore[arg-type]
    states = sim._states
    levels = len(sim._power_w) // states
    epochs = 0
    while sim.advance():
        epochs += 1
        if epochs % 7 == 0:
            sim.repartition(4 if (epochs // 7) % 2 else 3)
        power, busy = sim._power_w, sim._busy_time
        expected = 0.0
        for level in range(levels):
            span = range(level * states, (level + 1) * states)
            expected += sum(power[i] * busy[i] for i in span if busy[i])
        assert sim.energy_j == expected
    assert epochs > 100 and sim.energy_j > 0
    if clock is not None:
        assert len({i // states for i, t in enumerate(sim._busy_time) if t}) >= 2  # the clock changed


def test_a_clock_governor_scales_time_and_busy_power() -> None:
    # One 7g job of 100 s on configuration 1 at half speed: 200 s at 40 + (248.5 - 40) x 0.8 W.
    job = Job(
        "a", 0.0, 1000.0, JobKind.INFERENCE, Scaling.LINEAR, (700.0, 350.0, 700 / 3, 175.0, 100.0), 100 / 1.06
    )
    result = MigSimulation([job], 1, "edf-fs", clock=_HalfSpeed()).run()
    assert result.end_s == pytest.approx(200.0)
    assert result.energy_j == pytest.approx(200.0 * (40.0 + 208.5 * 0.8))
    assert result.busy_time_s[7] == pytest.approx(200.0)
