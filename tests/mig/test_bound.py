"""The lower bounds (wattsched.mig.bound): never above the best schedule an exhaustive search finds on small
days, never above any simulated run, equal to the optimum where docs/concepts/bound.md says they are tight,
and refused in one line where they cannot be computed. Durations are (1g, 2g, 3g, 4g, 7g, full); P(u) = 40,
119, 160, 205.3, 243.9, 247.7, 248.5, 248.5 W (the A100-40GB)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import simulate
from wattsched.mig.bound import closed_form_energy_j, lower_bound
from wattsched.mig.partition.base import PARTITIONERS
from wattsched.mig.partition.runner import run_day
from wattsched.workload.job import Job, JobKind, Scaling

P = (40.0, 119.0, 160.0, 205.3, 243.9, 247.7, 248.5, 248.5)
GPU = load_gpu(None)
#: ET's a per J for the ET bound's checks: energy and tardiness (min) weigh about alike on these days
A = 2e-4


def et(energy_j: float, tardiness_s: float, a: float = A) -> float:
    return (a * energy_j + tardiness_s / 60.0) / (a + 1.0)


def job(name: str, arrival: float, deadline: float, durations: Sequence[float], full: float) -> Job:
    return Job(name, arrival, deadline, JobKind.TRAINING, Scaling.MEASURED, tuple(durations), full)


def linear(name: str, arrival: float, deadline: float, one: float) -> Job:
    """A linear job: ``one`` s on 1g, one/g on g slices, 6 % faster than 7g with MIG off."""
    durations = tuple(one / g for g in (1, 2, 3, 4, 7))
    return job(name, arrival, deadline, durations, durations[-1] / 1.06)


def schedule_cost(
    jobs: Sequence[Job], slots: Sequence[tuple[int, int]], order: Sequence[Sequence[int]], horizon: float
) -> tuple[float, float]:
    """Energy (J) and average tardiness (s) of a non-preemptive schedule: slot ``i`` (compute size, duration
    column) runs the jobs ``order[i]`` one after the other, each from max(its arrival, the slot's previous
    end). Energy integrates P(u) from 0 to max(horizon, last completion)."""
    intervals = []
    tardiness = 0.0
    for (units, column), queue in zip(slots, order, strict=True):
        free = 0.0
        for j in queue:
            start = max(free, jobs[j].arrival_s)
            end = start + jobs[j].durations_for(GPU.compute_sizes)[column]
            intervals.append((start, end, units))
            tardiness += max(0.0, end - jobs[j].deadline_s)
            free = end
    finish = max([horizon, *(e for _, e, _ in intervals)])
    cuts = sorted({0.0, finish, *(s for s, _, _ in intervals), *(e for _, e, _ in intervals)})
    energy = 0.0
    for left, right in itertools.pairwise(cuts):
        busy = sum(u for s, e, u in intervals if s <= left and e >= right)
        energy += P[min(busy, 7)] * (right - left)
    return energy, tardiness / len(jobs)


def exhaustive(jobs: Sequence[Job], configurations: Sequence[int | str], horizon: float) -> list[tuple]:
    """(energy, tardiness) of every non-preemptive schedule on each one configuration: every assignment of
    the jobs to its slices and every order on each slice."""
    found = []
    n = len(jobs)
    for ident in configurations:
        config = GPU.configuration(ident)
        slots = [(s.compute, s.duration_index) for s in config.slices]
        for assignment in itertools.product(range(len(slots)), repeat=n):
            groups = [[j for j in range(n) if assignment[j] == i] for i in range(len(slots))]
            for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
                found.append(schedule_cost(jobs, slots, orders, horizon))
    return found


SMALL_DAYS = {
    "sublinear pair": (
        [
            job("a", 0, 500, (400, 250, 200, 180, 150), 145),
            job("b", 30, 400, (300, 200, 160, 150, 120), 118),
        ],
        [1, 2, 5],
        600.0,
    ),
    "crowded four": (
        [
            job("a", 0, 300, (900, 500, 380, 300, 200), 190),
            job("b", 10, 350, (600, 320, 240, 200, 150), 140),
            job("c", 20, 260, (800, 420, 300, 240, 180), 175),
            job("d", 200, 900, (300, 170, 120, 100, 80), 78),
        ],
        [1, 3],
        400.0,
    ),
    "six with no-mig": (
        [
            job("a", 0, 400, (500, 260, 190, 150, 100), 95),
            job("b", 0, 250, (400, 210, 150, 120, 90), 85),
            job("c", 50, 600, (200, 120, 90, 80, 70), 66),
            job("d", 90, 300, (350, 190, 140, 110, 80), 76),
            job("e", 300, 700, (150, 90, 70, 60, 50), 48),
            job("f", 320, 450, (600, 320, 230, 180, 120), 113),
        ],
        [2, "no-mig"],
        500.0,
    ),
}


@pytest.mark.parametrize("name", list(SMALL_DAYS))
def test_bounds_never_exceed_the_exhaustive_optimum(name: str) -> None:
    jobs, configurations, horizon = SMALL_DAYS[name]
    schedules = exhaustive(jobs, configurations, horizon)
    bound = lower_bound(jobs, horizon_s=horizon, configurations=configurations, et_coefficient=A)
    best_energy = min(e for e, _ in schedules)
    best_tardiness = min(t for _, t in schedules)
    assert bound.energy_j <= best_energy
    assert bound.closed_form_j <= bound.energy_j
    assert bound.tardiness_s <= best_tardiness
    assert bound.et is not None and bound.et <= min(et(e, t) for e, t in schedules)
    assert bound.et >= et(bound.energy_j, bound.tardiness_s) * (1 - 1e-9)  # never below the separate bounds
    on_time = [e for e, t in schedules if t == 0.0]
    if bound.on_time_energy_j is None:
        assert bound.tardiness_s > 0 and not on_time  # zero tardiness proven impossible
    elif on_time:
        assert bound.on_time_energy_j <= min(on_time)
        assert bound.on_time_energy_j >= bound.energy_j
    # the coarse grid is a bound too, never above the finer cut
    coarse = lower_bound(jobs, horizon_s=horizon, configurations=configurations, resolution_s=250.0)
    assert coarse.energy_j <= best_energy and coarse.tardiness_s <= best_tardiness


def test_the_crowded_day_cannot_be_on_time_and_the_bound_says_so() -> None:
    # c needs 175 s alone on the fastest slot and is due 240 s after it arrives, but a and b need the GPU too:
    # with configurations 1 and 3 every schedule is late
    jobs, configurations, horizon = SMALL_DAYS["crowded four"]
    bound = lower_bound(jobs, horizon_s=horizon, configurations=configurations)
    assert min(t for _, t in exhaustive(jobs, configurations, horizon)) > 0
    assert bound.tardiness_s > 0
    assert bound.on_time_energy_j is None


def test_tight_for_linear_jobs_run_one_after_the_other_on_the_whole_gpu() -> None:
    # linear jobs cost the same busy slice-seconds on every slice, least with MIG off (6 % faster); the chord
    # from idle to 7 busy slices is P1's power curve made convex from below, so the bound is
    # P(0)·horizon + (P(7) − P(0))·Σ dur_full, which the serial no-MIG schedule reaches when it ends in time
    jobs = [linear("a", 0, 1e4, 700.0), linear("b", 200, 1e4, 350.0), linear("c", 260, 1e4, 1400.0)]
    horizon = 1000.0
    full = [j.dur_full_s for j in jobs]
    expected = P[0] * horizon + (P[7] - P[0]) * sum(full)
    bound = lower_bound(jobs, horizon_s=horizon, configurations=[1, 12, "no-mig"])
    best = min(e for e, _ in exhaustive(jobs, [1, 12, "no-mig"], horizon))
    assert best == pytest.approx(expected, rel=1e-12)
    assert bound.energy_j == pytest.approx(expected, rel=1e-5)
    assert bound.energy_j <= best
    assert bound.tardiness_s == 0.0 and bound.on_time_energy_j == pytest.approx(expected, rel=1e-5)


def test_tight_tardiness_for_a_job_that_cannot_meet_its_deadline() -> None:
    # alone, its fastest run (MIG off, 95 s) ends at 20 + 95 = 115 s, 45 s after its deadline of 70 s
    jobs = [job("late", 20, 70, (500, 260, 190, 150, 100), 95)]
    bound = lower_bound(jobs, horizon_s=200.0)
    assert bound.tardiness_s == pytest.approx(45.0, rel=2e-6)  # the safety margin, 1e-6
    assert min(t for _, t in exhaustive(jobs, [1, "no-mig"], 200.0)) == pytest.approx(45.0)
    assert bound.on_time_energy_j is None


def test_closed_form_by_hand() -> None:
    # σ = (P(7) − P(0)) / 7 = 29.7857 W per busy slice (the least over the curve); job a's cheapest slot is
    # 1g (1 · 400 = 400 slice-seconds), b's too (300); the run cannot end before b's fastest end, 30 + 118
    jobs = SMALL_DAYS["sublinear pair"][0]
    sigma = (P[7] - P[0]) / 7
    expected = P[0] * 600.0 + sigma * (400 + 300)
    assert closed_form_energy_j(jobs, horizon_s=600.0) == pytest.approx(expected, rel=1e-12)
    assert closed_form_energy_j(jobs, horizon_s=10.0) == pytest.approx(P[0] * 148.0 + sigma * 700, rel=1e-12)


@st.composite
def small_days(draw: st.DrawFn) -> list[Job]:
    count = draw(st.integers(1, 6))
    jobs = []
    for i in range(count):
        arrival = draw(st.floats(0, 600, allow_nan=False))
        one = draw(st.floats(50, 900, allow_nan=False))
        exponent = draw(st.sampled_from([1.0, 0.75, 0.5, 0.0]))
        durations = tuple(one / g**exponent for g in (1, 2, 3, 4, 7))
        slack = draw(st.floats(0.5, 3.0, allow_nan=False))
        jobs.append(job(f"j{i}", arrival, arrival + slack * durations[-1], durations, durations[-1] / 1.06))
    return jobs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_days(), st.sampled_from(["edf-ss-restricted", "edf-fs", "llf"]))
def test_no_simulated_run_beats_the_bound(jobs: list[Job], policy: str) -> None:
    horizon = 800.0
    bound = lower_bound(jobs, horizon_s=horizon, et_coefficient=A)
    runs = [simulate(jobs, c, policy, horizon_s=horizon) for c in (1, 3, 8, 12, "no-mig")]
    runs.append(run_day(jobs, PARTITIONERS.make("day-night"), horizon_s=horizon).result)
    for run in runs:
        assert bound.energy_j <= run.energy_j
        assert bound.tardiness_s <= run.avg_tardiness_s + 1e-9
        assert bound.et is not None and bound.et <= et(run.energy_j, run.avg_tardiness_s)
        if run.avg_tardiness_s == 0.0:
            assert bound.on_time_energy_j is not None and bound.on_time_energy_j <= run.energy_j


def test_a_trace_too_large_for_the_resolution_is_one_line() -> None:
    jobs = [linear(f"j{i}", 10.0 * i, 1e5, 300.0) for i in range(40)]
    with pytest.raises(ConfigError, match=r"40 jobs .* needs [\d,]+ variables; the limit is 1,000"):
        lower_bound(jobs, horizon_s=400.0, max_variables=1000)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"resolution_s": 0.0}, "resolution_s must be a number > 0"),
        ({"resolution_s": math.nan}, "resolution_s must be a number > 0"),
        ({"horizon_s": -1.0}, "horizon_s must be a finite number >= 0"),
        ({"configurations": []}, "at least one configuration"),
        ({"configurations": [99]}, "unknown configuration '99'"),
        ({"et_coefficient": -1.0}, "et_coefficient must be a finite number >= 0"),
    ],
)
def test_bad_options_are_one_line(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        lower_bound([linear("a", 0, 100, 300.0)], **options)


def test_an_empty_trace_is_the_idle_day() -> None:
    bound = lower_bound([], horizon_s=100.0)
    assert bound.energy_j == bound.on_time_energy_j == pytest.approx(P[0] * 100.0)
    assert bound.tardiness_s == 0.0


def test_tight_on_one_slot_whatever_the_order() -> None:
    # with configuration 1 only, every job runs on the same 7 slices: a schedule that ends before the
    # horizon uses P(0)·horizon + (P(7) − P(0))·Σ dur_7 whatever it does, and the bound is that
    jobs = [job(f"j{i}", 40.0 * i, 40.0 * i + 60.0, (500, 260, 190, 150, 100 + 10 * i), 95) for i in range(5)]
    horizon = 2000.0
    run = simulate(jobs, 1, "edf-ss-restricted", horizon_s=horizon)
    expected = P[0] * horizon + (P[7] - P[0]) * sum(100 + 10 * i for i in range(5))
    assert run.energy_j == pytest.approx(expected, rel=1e-12)
    bound = lower_bound(jobs, horizon_s=horizon, configurations=[1])
    assert bound.energy_j == pytest.approx(expected, rel=2e-6) and bound.energy_j <= run.energy_j


def test_a_bound_exact_to_rounding_stays_below_the_schedule_it_equals() -> None:
    """One job alone with MIG off: the closed form is exact, and its sum and the simulator's differ in the
    last bits. The bound is lowered by its rounding margin, so it never exceeds the schedule's energy."""
    durations = (75.0, 37.5, 25.0, 18.75, 10.714285714285714)
    jobs = [job("j0", 0.0, 10.714285714285714, durations, 10.107816711590296)]
    bound = lower_bound(jobs, horizon_s=800.0, et_coefficient=A)
    run = simulate(jobs, "no-mig", "edf-ss-restricted", horizon_s=800.0)
    assert bound.energy_j <= run.energy_j and bound.energy_j == pytest.approx(run.energy_j, rel=1e-8)
    assert bound.et is not None and bound.et <= et(run.energy_j, run.avg_tardiness_s)
