"""Property tests over random small traces, every configuration and every policy (papers.md §A.5.6), on P1's
A100-40GB and on the H200 (per-kind power curves). The invariants are the shipped checker
:func:`wattsched.mig.checks.check_run`, recomputed from the per-job records alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import POLICIES, MigSimulation, simulate
from wattsched.mig.checks import check_run
from wattsched.workload.job import Job, JobKind, Scaling

A100 = load_gpu("a100-40gb")
GPUS = [A100, load_gpu("h200-141gb")]
CONFIGS: list[int | str] = [*A100.configuration_ids, "no-mig"]
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
        durations = tuple(base / s for s in speedup)
        full = durations[4] / 1.06 if speedup[4] == 7.0 else durations[4]
        slack = draw(st.sampled_from([0.0, 0.5, 1.0, 1.25, 1.5, 3.0]))
        # Kind changes no decision; it counts late inference jobs and chooses the H200's power curve.
        kind = draw(st.sampled_from([JobKind.INFERENCE, JobKind.TRAINING]))
        jobs.append(
            Job(f"j{i}", arrival, arrival + slack * durations[4], kind, Scaling.MEASURED, durations, full)
        )
    return jobs


@given(traces(), st.sampled_from(CONFIGS), st.sampled_from(POLICIES.available()), st.sampled_from(GPUS))
def test_invariants_hold_for_every_policy_and_configuration(
    jobs: list[Job], ident: int | str, policy: str, gpu: object
) -> None:
    result = simulate(jobs, ident, policy, record_jobs=True, gpu=gpu)  # type: ignore[arg-type]
    check_run(jobs, result, gpu=gpu, configuration=ident)  # type: ignore[arg-type]
    assert simulate(jobs, ident, policy, record_jobs=True, gpu=gpu) == result  # type: ignore[arg-type]
    # The late counts need no records: they agree with the records' tardiness, and a run without records
    # gives the same totals.
    assert result.records is not None
    kinds = {job.job_id: job.kind for job in jobs}
    late = [r for r in result.records if r.tardiness_s > 0]
    assert result.late_jobs == len(late)
    assert result.late_inference_jobs == sum(kinds[r.job_id] == JobKind.INFERENCE for r in late)
    bare = simulate(jobs, ident, policy, gpu=gpu)  # type: ignore[arg-type]
    assert bare.records is None and bare.to_dict() == result.to_dict()
    assert bare.late_inference_jobs == result.late_inference_jobs


@given(traces(), st.sampled_from([1, 5, "no-mig"]))
def test_variants_coincide_when_all_slices_are_identical(jobs: list[Job], ident: int | str) -> None:
    for first, second in (("edf-fs", "edf-ss"), ("llf", "lalf")):
        one = simulate(jobs, ident, first, record_jobs=True)
        assert one == simulate(jobs, ident, second, record_jobs=True)


@given(
    traces(),
    st.lists(st.sampled_from(CONFIGS), min_size=1, max_size=30),
    st.sampled_from(POLICIES.available()),
    st.sampled_from(["blackout", "deadline_shift"]),
)
def test_invariants_hold_across_repartitions(
    jobs: list[Job], choices: list[int | str], policy: str, mode: str
) -> None:
    sim = MigSimulation(
        jobs,
        choices[0],
        policy,
        record_jobs=True,
        repartition_mode=mode,  # type: ignore[arg-type]
    )
    step = 0
    while sim.advance():
        assert not sim.in_blackout
        step += 1
        sim.repartition(choices[step % len(choices)])
    result = sim.result()
    if mode == "blackout":
        assert result.blackout_s == pytest.approx(A100.repartition_s * result.repartitions)
        assert result.busy_time_s[0] >= result.blackout_s - 1e-9
    else:
        assert result.blackout_s == 0.0
        # Tardiness is measured against the shifted deadlines: check against the records' deadlines.
        jobs = [
            Job(j.job_id, j.arrival_s, r.deadline_s, j.kind, j.scaling, j.durations_s, j.dur_full_s)
            for j, r in zip(jobs, result.records or (), strict=True)
        ]
    check_run(jobs, result)
