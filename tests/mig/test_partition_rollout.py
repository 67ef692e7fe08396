"""The rollout partitioner: it takes the configuration whose simulated window costs least, keeps the base
policy's choice on ties, never sees the day's future arrivals, and is deterministic for a seed.

Durations are (1g, 2g, 3g, 4g, 7g, full) on P1's A100-40GB; P(u) = 40, 119, 160, 205.3, 243.9, 247.7,
248.5, 248.5 W for u busy compute slices; a repartition blacks the GPU out for 4 s."""

from __future__ import annotations

import pytest

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import MigSimulation
from wattsched.mig.partition import PARTITIONERS, RolloutPartitioner, run_day
from wattsched.mig.partition.fixed import StaticPartitioner
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling

GPU = load_gpu(None)
BIG = 9999.0


def _job(deadline_s: float) -> Job:
    # 240 s on 3g, 160 s on 4g, 100 s on 7g.
    durations = (BIG, BIG, 240.0, 160.0, 100.0)
    return Job("A", 0.0, deadline_s, JobKind.TRAINING, Scaling.MEASURED, durations, 90.0)


def _first_decision(policy: RolloutPartitioner, jobs: list[Job]) -> int | str:
    policy.reset(GPU, 0)
    sim = MigSimulation(jobs, policy.initial_configuration(), policy.scheduler, gpu=GPU, horizon_s=600.0)
    assert sim.advance()
    return policy.decide(sim.snapshot())


def test_takes_the_configuration_with_the_least_lateness() -> None:
    # Static config 5 (3g + 3g) finishes A at 240 s: 120 s late. Config 1 (7g) after the 4 s blackout
    # finishes at 104 s: on time; configs 2-4 (4g) at 164 s: 44 s late; the others have 3g or less. With
    # a = 0 only lateness counts, and only config 1 costs nothing.
    policy = RolloutPartitioner(StaticPartitioner(5), et_coefficient=0.0, jobs_norm=1.0, scenarios=0)
    assert _first_decision(policy, [_job(120.0)]) == 1


def test_costs_are_measured_on_a_copy_with_the_hand_computed_values() -> None:
    policy = RolloutPartitioner(StaticPartitioner(5), et_coefficient=1e-3, jobs_norm=2.0, scenarios=0)
    policy.reset(GPU, 0)
    sim = MigSimulation([_job(120.0)], 5, policy.scheduler, gpu=GPU, horizon_s=600.0)
    sim.advance()
    snap = sim.snapshot()
    # Stay on 5: 240 s at P(3) = 205.3 W, 2 min late: 1e-3 * 165.3 * 240 + 2 / 2.
    assert policy._cost(snap, 5, [], 0.0) == pytest.approx(1e-3 * 165.3 * 240 + 1.0)
    # Config 1: 4 s blackout at idle (no dynamic energy), 100 s at P(7) = 248.5 W, on time.
    assert policy._cost(snap, 1, [], 0.0) == pytest.approx(1e-3 * 208.5 * 100)
    assert sim.configuration.ident == 5 and sim.energy_j == 0.0  # the real run is untouched


def test_ties_keep_the_base_policys_choice() -> None:
    # A loose deadline and a = 0: every candidate costs 0, so the base's configuration stays.
    policy = RolloutPartitioner(StaticPartitioner(5), et_coefficient=0.0, jobs_norm=1.0, scenarios=0)
    assert _first_decision(policy, [_job(10_000.0)]) == 5


def test_the_plan_lists_every_candidate_with_its_cost_and_the_cheapest_is_the_choice() -> None:
    policy = RolloutPartitioner(StaticPartitioner(5), et_coefficient=0.0, jobs_norm=1.0, scenarios=0)
    policy.reset(GPU, 0)
    sim = MigSimulation([_job(120.0)], 5, policy.scheduler, gpu=GPU, horizon_s=600.0)
    sim.advance()
    snap = sim.snapshot()
    plan = policy.plan(snap)
    # a base that cannot rank: its choice first, then every other configuration
    assert plan.candidates[0] == 5 and set(plan.candidates) == set(GPU.configuration_ids)
    assert plan.costs == tuple(policy._cost(snap, c, [], 0.0) for c in plan.candidates)
    # a = 0: the cost is the lateness, 2 min on 5 (above), 0 only on config 1
    assert plan.costs[0] == pytest.approx(2.0) and plan.choice == 1 == policy.decide(snap)
    assert plan.costs[plan.candidates.index(1)] == 0.0


def test_without_jobs_the_plan_simulates_nothing() -> None:
    policy = RolloutPartitioner(StaticPartitioner(5), et_coefficient=0.0, jobs_norm=1.0, scenarios=0)
    policy.reset(GPU, 0)
    sim = MigSimulation([_job(120.0)], 5, policy.scheduler, gpu=GPU, horizon_s=600.0)
    sim.advance()
    from dataclasses import replace

    empty = replace(sim.snapshot(), jobs=())
    assert policy.plan(empty) == (5, (), ())


def test_decisions_never_depend_on_future_arrivals() -> None:
    spec = WorkloadSpec(profile="alibaba-day", hours=1.5, rate_multiplier=2.5)
    jobs = generate_jobs(spec, 3)
    cut_s = 2700.0
    # The same day with every job after the cut removed: decisions before the cut must not change.
    known = [j for j in jobs if j.arrival_s <= cut_s]
    assert len(known) < len(jobs)

    def decisions(trace: list[Job]) -> list[tuple[float, int | str]]:
        policy = PARTITIONERS.make(
            "rollout", base="day-night", et_coefficient=1e-7, jobs_norm=500.0, scenarios=1, workload=spec
        )
        run = run_day(trace, policy, horizon_s=spec.horizon_s, seed=5, gpu=GPU)
        return [(d.time_s, d.configuration) for d in run.decisions if d.time_s <= cut_s]

    full = decisions(jobs)
    assert len(full) > 10
    assert {c for _, c in full} - {6}  # it does repartition away from Day-Night's day configuration
    assert decisions(known) == full


def test_same_seed_same_day() -> None:
    spec = WorkloadSpec(profile="alibaba-day", hours=1.0, rate_multiplier=2.5)
    jobs = generate_jobs(spec, 4)

    def run(seed: int) -> tuple[float, float]:
        policy = RolloutPartitioner(StaticPartitioner(3), 1e-7, 500.0, scenarios=2, workload=spec)
        result = run_day(jobs, policy, horizon_s=spec.horizon_s, seed=seed, gpu=GPU).result
        return result.energy_j, result.avg_tardiness_s

    assert run(1) == run(1)


def test_bad_options_and_snapshots_without_a_simulation() -> None:
    with pytest.raises(ConfigError, match="window_s"):
        RolloutPartitioner(StaticPartitioner(3), 1e-7, 500.0, window_s=0.0)
    with pytest.raises(ConfigError, match="jobs_norm"):
        RolloutPartitioner(StaticPartitioner(3), 1e-7, 0.0)
    policy = RolloutPartitioner(StaticPartitioner(5), 0.0, 1.0, scenarios=0)
    policy.reset(GPU, 0)
    sim = MigSimulation([_job(120.0)], 5, policy.scheduler, gpu=GPU)
    sim.advance()
    from dataclasses import replace

    with pytest.raises(ConfigError, match="fork_arrived"):
        policy.decide(replace(sim.snapshot(), fork_arrived=None))


def test_days_shared_among_processes_give_the_same_results() -> None:
    from wattsched.mig.partition.evaluate import evaluate_days

    spec = WorkloadSpec(profile="alibaba-day", hours=1.0, rate_multiplier=2.5)
    policy = PARTITIONERS.make(
        "rollout", base="day-night", et_coefficient=1e-7, jobs_norm=500.0, scenarios=1, workload=spec
    )
    days = [4, 1, 2]
    counts: list[int] = []
    alone = evaluate_days("rollout", policy, days, 7, spec, progress=counts.append)
    shared_counts: list[int] = []
    shared = evaluate_days("rollout", policy, days, 7, spec, workers=2, progress=shared_counts.append)
    assert [r.day for r in shared] == days
    assert [r.row() for r in shared] == [r.row() for r in alone]
    assert counts == shared_counts == [1, 2, 3]  # days done, after each day, in either mode
    with pytest.raises(ValueError, match="workers"):
        evaluate_days("rollout", policy, days, 7, spec, workers=0)
    # the simulator's power options reach the worker processes
    options = {"gpu": "h200-141gb", "power_curve": "compute-fma", "power_cap": True}
    fma = evaluate_days("dn", PARTITIONERS.make("day-night"), days, 7, spec, workers=2, **options)
    assert [r.row() for r in fma] == [
        r.row() for r in evaluate_days("dn", PARTITIONERS.make("day-night"), days, 7, spec, **options)
    ]
    default = evaluate_days("dn", PARTITIONERS.make("day-night"), days, 7, spec, gpu="h200-141gb")
    assert [r.energy_j for r in fma] != pytest.approx([r.energy_j for r in default])
