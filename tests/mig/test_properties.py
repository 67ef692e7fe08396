"""Property tests over random small traces, every configuration and every policy (papers.md §A.5.6)."""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.hardware.mig import Configuration, default_profile
from wattsched.mig import POLICIES, MigSimulation, SimResult, simulate
from wattsched.workload.job import Job, JobKind, Scaling

PROFILE = default_profile()
CONFIGS: list[int | str] = [*range(1, 13), "no-mig"]
SPEEDUPS = [
    (1.0, 2.0, 3.0, 4.0, 7.0),  # linear
    (1.0, 2.0, 2.0, 2.0, 2.0),  # capped at 2 (ties between slice sizes)
    (1.0, 2.0, 3.0, 3.0, 3.0),  # capped at 3
    (1.0, 1.682, 2.280, 2.828, 4.304),  # g^0.75
]


@st.composite
def traces(draw: st.DrawFn, max_jobs: int = 12) -> list[Job]:
    n = draw(st.integers(1, max_jobs))
    jobs = []
    for i in range(n):
        arrival = float(draw(st.integers(0, 900)))  # integers: simultaneous events happen
        base = float(draw(st.integers(1, 600)))
        speedup = draw(st.sampled_from(SPEEDUPS))
        durations = [base / s for s in speedup]
        durations.append(durations[4] / 1.06 if speedup[4] == 7.0 else durations[4])
        slack = draw(st.sampled_from([0.0, 0.5, 1.0, 1.25, 1.5, 3.0]))
        kind = JobKind.INFERENCE if i % 2 else JobKind.TRAINING  # kind changes no decision, only counts
        jobs.append(Job(f"j{i}", arrival, arrival + slack * durations[4], kind, Scaling.MEASURED,
                        tuple(durations)))  # type: ignore[arg-type]
    return jobs


def _slice_spec(ident: int | str, first_slot: int) -> tuple[int, int]:
    config = PROFILE.configuration(ident)
    for spec in config.slices:
        if spec.first_slot == first_slot:
            return spec.compute_units, spec.duration_index
    raise AssertionError(f"no slice at slot {first_slot} in configuration {ident}")


def check_invariants(jobs: list[Job], result: SimResult, config: Configuration | None) -> None:
    """Invariants from the per-job slice histories alone (independent of the simulator's bookkeeping)."""
    records = result.records
    assert records is not None and len(records) == len(jobs) == result.jobs
    by_slice: dict[tuple[int | str, int], list[tuple[float, float]]] = defaultdict(list)
    changes: list[tuple[float, int]] = []
    total_tardiness = 0.0
    for job, rec in zip(jobs, records, strict=True):
        assert rec.job_id == job.job_id
        assert math.isfinite(rec.completion_s) and rec.completion_s >= job.arrival_s
        assert rec.slices and rec.start_s == rec.slices[0][0] >= job.arrival_s
        assert rec.slices[-1][1] == pytest.approx(rec.completion_s)
        work = 0.0
        previous_end = -math.inf
        for start, end, ident, slot in rec.slices:
            assert end > start >= previous_end - 1e-9  # never on two slices at once
            previous_end = end
            units, dix = _slice_spec(ident, slot)
            work += (end - start) / job.durations_s[dix]
            by_slice[(ident, slot)].append((start, end))
            changes += [(start, units), (end, -units)]
        assert work == pytest.approx(1.0, rel=1e-9, abs=1e-9)  # every job completes exactly once
        total_tardiness += rec.tardiness_s
        assert rec.tardiness_s == pytest.approx(max(0.0, rec.completion_s - rec.deadline_s), abs=1e-8)
    for intervals in by_slice.values():  # no slice runs two jobs at once
        intervals.sort()
        for (_, end), (start, _) in pairwise(intervals):
            assert start >= end - 1e-9
    # Energy recomputed independently: sweep u(t) over the segment boundaries.
    changes.sort()
    energy = 0.0
    units = 0
    last = 0.0
    limit = config.total_units if config is not None else PROFILE.total_units
    for time, delta in changes:
        energy += PROFILE.power_w[units] * (time - last)
        units += delta
        last = time
        assert 0 <= units <= limit
    energy += PROFILE.power_w[0] * (result.end_s - last)
    assert result.energy_j == pytest.approx(energy, rel=1e-9)
    assert sum(result.busy_time_s) == pytest.approx(result.end_s, rel=1e-12)
    assert all(t == 0.0 for t in result.busy_time_s[limit + 1:])
    assert result.avg_tardiness_s == pytest.approx(total_tardiness / len(jobs), abs=1e-9)
    if config is not None:
        _check_work_conserving(jobs, records, len(config.slices))


def _check_work_conserving(jobs: list[Job], records: tuple, n_slices: int) -> None:  # type: ignore[type-arg]
    """A free slice idles only when no job waits: check at the middle of every elementary interval."""
    ends = (t for r in records for s in r.slices for t in s[:2])
    points = sorted({0.0, *(j.arrival_s for j in jobs), *ends})
    for lo, hi in pairwise(points):
        if hi - lo < 1e-6:
            continue
        mid = (lo + hi) / 2
        running = sum(1 for r in records for s in r.slices if s[0] <= mid < s[1])
        present = sum(1 for j, r in zip(jobs, records, strict=True) if j.arrival_s <= mid < r.completion_s)
        assert running <= n_slices
        assert running in (n_slices, present)


@given(traces(), st.sampled_from(CONFIGS), st.sampled_from(POLICIES.available()))
def test_invariants_hold_for_every_policy_and_configuration(
    jobs: list[Job], ident: int | str, policy: str
) -> None:
    result = simulate(jobs, ident, policy, record_jobs=True)
    check_invariants(jobs, result, PROFILE.configuration(ident))
    assert simulate(jobs, ident, policy, record_jobs=True) == result  # deterministic
    # The late counts need no records: they agree with the records' tardiness, and a run without records
    # gives the same totals.
    assert result.records is not None
    kinds = {job.job_id: job.kind for job in jobs}
    late = [r for r in result.records if r.tardiness_s > 0]
    assert result.late_jobs == len(late)
    assert result.late_inference_jobs == sum(kinds[r.job_id] == JobKind.INFERENCE for r in late)
    bare = simulate(jobs, ident, policy)
    assert bare.records is None and bare.to_dict() == result.to_dict()
    assert bare.late_inference_jobs == result.late_inference_jobs


@given(traces(), st.sampled_from([1, 5, "no-mig"]))
def test_variants_coincide_when_all_slices_are_identical(jobs: list[Job], ident: int | str) -> None:
    for first, second in (("edf-fs", "edf-ss"), ("llf", "lalf")):
        one = simulate(jobs, ident, first, record_jobs=True)
        assert one == simulate(jobs, ident, second, record_jobs=True)


@given(traces(), st.lists(st.sampled_from(CONFIGS), min_size=1, max_size=30),
       st.sampled_from(POLICIES.available()), st.sampled_from(["blackout", "deadline_shift"]))
def test_invariants_hold_across_repartitions(
    jobs: list[Job], choices: list[int | str], policy: str, mode: str
) -> None:
    sim = MigSimulation(
        jobs, choices[0], policy, record_jobs=True, repartition_mode=mode  # type: ignore[arg-type]
    )
    step = 0
    while sim.advance():
        assert not sim.in_blackout
        step += 1
        sim.repartition(choices[step % len(choices)])
    result = sim.result()
    if mode == "blackout":
        assert result.blackout_s == pytest.approx(PROFILE.repartition_s * result.repartitions)
        assert result.busy_time_s[0] >= result.blackout_s - 1e-9
    else:
        assert result.blackout_s == 0.0
        # Tardiness is measured against the shifted deadlines: check against the records' deadlines.
        jobs = [Job(j.job_id, j.arrival_s, r.deadline_s, j.kind, j.scaling, j.durations_s)
                for j, r in zip(jobs, result.records or (), strict=True)]
    check_invariants(jobs, result, None)
