"""Synthetic job queues: P1's job mix (papers.md §A.3.3-§A.3.6) and determinism."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.scaling import (
    SUBLINEAR_CURVES,
    ScalingCurve,
    capped_curve,
    durations_from_base,
    linear_curve,
)
from wattsched.workload.traces import frame_to_jobs, jobs_to_frame

# The active hypothesis profile (tests/conftest.py): 100 examples, 1000 with HYPOTHESIS_PROFILE=slow.
EXAMPLES = settings().max_examples

PAPER_CURVES = {
    Scaling.LINEAR: [linear_curve()],
    Scaling.SUBLINEAR: list(SUBLINEAR_CURVES),
    Scaling.CAPPED: [capped_curve(2), capped_curve(3), capped_curve(4)],
}


def curve_of(job: Job, candidates: list[ScalingCurve]) -> ScalingCurve:
    """The candidate whose durations_from_base reproduces the job's durations bit for bit."""
    matches = [
        c
        for c in candidates
        if durations_from_base(job.durations_s[0], c) == (*job.durations_s, job.dur_full_s)
    ]
    assert matches, job
    return matches[0]


@pytest.fixture(scope="module")
def big_queue() -> list[Job]:
    # 5 jobs/min for 24 h: about 7200 jobs, enough for tight share bounds.
    return generate_jobs(WorkloadSpec(rate_per_min=5.0), seed=2024)


def test_same_seed_same_jobs_and_different_seed_differs() -> None:
    spec = WorkloadSpec(profile="alibaba-day")
    assert generate_jobs(spec, 11) == generate_jobs(spec, 11)
    assert generate_jobs(spec, 11) != generate_jobs(spec, 12)
    seq = np.random.SeedSequence(99)
    # A SeedSequence argument is not consumed: the same object gives the same jobs twice.
    assert generate_jobs(spec, seq) == generate_jobs(spec, seq) == generate_jobs(spec, 99)


def test_ids_order_and_window(big_queue: list[Job]) -> None:
    assert [j.job_id for j in big_queue[:3]] == ["j000000", "j000001", "j000002"]
    assert big_queue[-1].job_id == f"j{len(big_queue) - 1:06d}"
    arrivals = [j.arrival_s for j in big_queue]
    assert arrivals == sorted(arrivals)
    assert arrivals[0] >= 0 and arrivals[-1] < 86_400
    # 5/min over 1440 min: mean 7200, sd 85.
    assert abs(len(big_queue) - 7200) < 4 * 85


def test_class_shares_and_base_durations(big_queue: list[Job]) -> None:
    n = len(big_queue)
    inference = [j for j in big_queue if j.kind == JobKind.INFERENCE]
    training = [j for j in big_queue if j.kind == JobKind.TRAINING]
    # Bernoulli(0.8): sd of the share = sqrt(0.16 / n) ≈ 0.0047.
    assert abs(len(inference) / n - 0.8) < 4 * np.sqrt(0.16 / n)
    inf_1g = np.array([j.durations_s[0] for j in inference])
    # Exponential(mean 180 s): standard error 180 / sqrt(~5760) ≈ 2.4 s.
    assert abs(inf_1g.mean() - 180.0) < 4 * 180.0 / np.sqrt(inf_1g.size)
    assert np.median(inf_1g) == pytest.approx(180.0 * np.log(2), rel=0.08)
    train_1g = np.array([j.durations_s[0] for j in training])
    assert train_1g.min() >= 600.0 and train_1g.max() <= 2400.0
    # U(600, 2400): mean 1500, sd 520, standard error ≈ 520 / sqrt(1440) ≈ 14 s.
    assert abs(train_1g.mean() - 1500.0) < 4 * 520.0 / np.sqrt(train_1g.size)


def test_scaling_mix_and_curves(big_queue: list[Job]) -> None:
    n = len(big_queue)
    counts = {kind: 0 for kind in PAPER_CURVES}
    members: dict[str, int] = {}
    for job in big_queue:
        counts[job.scaling] += 1
        curve = curve_of(job, PAPER_CURVES[job.scaling])
        members[curve.name] = members.get(curve.name, 0) + 1
    sd_third = np.sqrt((1 / 3) * (2 / 3) / n)
    for kind, count in counts.items():
        assert abs(count / n - 1 / 3) < 4 * sd_third, kind
    sub = counts[Scaling.SUBLINEAR]
    for curve in SUBLINEAR_CURVES:  # each of the four with probability 1/4 among sublinear jobs
        assert abs(members[curve.name] / sub - 0.25) < 4 * np.sqrt(0.25 * 0.75 / sub)
    cap = counts[Scaling.CAPPED]
    for c in (2, 3, 4):  # each cap with probability 1/3 among capped jobs
        assert abs(members[f"capped-{c}"] / cap - 1 / 3) < 4 * np.sqrt((2 / 9) / cap)


def test_deadline_rule(big_queue: list[Job]) -> None:
    slack = np.array([(j.deadline_s - j.arrival_s) / j.durations_s[4] for j in big_queue])
    assert slack.min() >= 1.0 - 1e-12 and slack.max() <= 1.5 + 1e-12
    assert slack.min() < 1.01 and slack.max() > 1.49  # the whole range is used
    assert slack.mean() == pytest.approx(1.25, abs=0.01)


def test_p1_rule_makes_every_1g_slice_infeasible(big_queue: list[Job]) -> None:
    # dur_1g >= 2·dur_7g for every family (capped at 2 is the tight case) and the slack is at most 1.5
    assert all(j.arrival_s + j.durations_s[0] > j.deadline_s for j in big_queue)


def test_slice_aware_rule(big_queue: list[Job]) -> None:
    spec = WorkloadSpec(rate_per_min=5.0, deadline_rule="slice-aware")
    jobs = generate_jobs(spec, seed=2024)
    assert len(jobs) == len(big_queue)
    sizes = (1, 2, 3, 4, 7)
    counts = dict.fromkeys(sizes, 0)
    for job, p1 in zip(jobs, big_queue, strict=True):
        # common random numbers across rules: everything but the deadline is the same job
        assert (job.arrival_s, job.kind, job.scaling, job.durations_s, job.dur_full_s) == (
            p1.arrival_s,
            p1.kind,
            p1.scaling,
            p1.durations_s,
            p1.dur_full_s,
        )
        # the same slack draw u, now times dur_g of some size g: (d - a) / dur_g == (d_p1 - a) / dur_7g
        slack = (p1.deadline_s - p1.arrival_s) / p1.durations_s[4]
        matches = [
            g
            for g, d in zip(sizes, job.durations_s, strict=True)
            if job.deadline_s - job.arrival_s == pytest.approx(slack * d, rel=1e-9, abs=1e-7)
        ]
        assert matches, job
        counts[matches[0]] += 1
    n = len(jobs)
    # the reference size is uniform over the five sizes (ties between equal durations go to the smaller size,
    # so the smaller sizes can only gain); about a fifth can meet their deadline on a 1g slice
    feasible_1g = np.mean([j.arrival_s + j.durations_s[0] <= j.deadline_s for j in jobs])
    assert abs(feasible_1g - 0.2) < 4 * np.sqrt(0.16 / n)
    assert counts[7] <= n / 5 + 4 * np.sqrt(0.16 * n)
    # a job started at once on its reference slice meets its deadline
    assert all(any(j.arrival_s + d <= j.deadline_s for d in j.durations_s) for j in jobs)


def test_unknown_deadline_rule() -> None:
    with pytest.raises(ConfigError, match="unknown deadline rule 'late'; valid: p1, slice-aware"):
        WorkloadSpec(rate_per_min=1.0, deadline_rule="late")


def test_full_gpu_duration_rule(big_queue: list[Job]) -> None:
    for job in big_queue[:500]:
        if job.scaling == Scaling.LINEAR:
            assert job.dur_full_s == job.durations_s[4] / 1.06
        else:
            assert job.dur_full_s == job.durations_s[4]


def test_inference_share_extremes_and_parameters() -> None:
    only_training = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=3, inference_share=0.0), 1)
    assert only_training and all(j.kind == JobKind.TRAINING for j in only_training)
    only_inference = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=3, inference_share=1.0), 1)
    assert only_inference and all(j.kind == JobKind.INFERENCE for j in only_inference)
    spec = WorkloadSpec(
        rate_per_min=1.0,
        hours=3,
        deadline_slack=(2.0, 2.0),
        inference_share=0.0,
        training_range_s=(100.0, 100.0),
        scaling_weights=(1.0, 0.0, 0.0),
    )
    for job in generate_jobs(spec, 4):
        assert job.durations_s[:5] == (100.0, 50.0, 100.0 / 3, 25.0, 100.0 / 7)
        assert job.deadline_s == job.arrival_s + 2.0 * (100.0 / 7)


def test_given_curves_replace_the_paper_mix() -> None:
    measured = ScalingCurve(Scaling.MEASURED, "resnet-inf", (1.0, 2.0, 3.0, 3.91, 5.75))
    spec = WorkloadSpec(rate_per_min=2.0, hours=4, curves=(measured, capped_curve(3)))
    jobs = generate_jobs(spec, 5)
    labels = {j.scaling for j in jobs}
    assert labels == {Scaling.MEASURED, Scaling.CAPPED}
    for job in jobs:
        curve = curve_of(job, [measured, capped_curve(3)])
        assert job.scaling == curve.kind
        assert job.dur_full_s == job.durations_s[4]  # only linear jobs gain the 6 %


def test_rate_multiplier_and_horizon() -> None:
    spec = WorkloadSpec(profile="alibaba-day", hours=48, rate_multiplier=2.0)
    assert spec.horizon_s == 172_800.0
    jobs = generate_jobs(spec, 3)
    # Two days at twice the profile: 4 * 207.42 = 829.7 expected, sd 28.8.
    assert abs(len(jobs) - 829.68) < 4 * 28.8
    assert jobs[-1].arrival_s < 172_800.0
    assert len(generate_jobs(WorkloadSpec(rate_per_min=0.5, rate_multiplier=4.0, hours=10), 1)) > 0


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"rate_per_min": 1.0, "profile": "alibaba-day"},
        {"rate_per_min": 0.0},
        {"rate_per_min": -0.5},
        {"rate_per_min": float("nan")},
        {"rate_per_min": 1.0, "hours": 0.0},
        {"rate_per_min": 1.0, "inference_share": 1.2},
        {"rate_per_min": 1.0, "inference_share": -0.1},
        {"rate_per_min": 1.0, "rate_multiplier": 0.0},
        {"rate_per_min": 1.0, "deadline_slack": (1.5, 1.0)},
        {"rate_per_min": 1.0, "deadline_slack": (-1.0, 1.0)},
        {"rate_per_min": 1.0, "inference_mean_s": 0.0},
        {"rate_per_min": 1.0, "training_range_s": (0.0, 10.0)},
        {"rate_per_min": 1.0, "scaling_weights": (0.0, 0.0, 0.0)},
        {"rate_per_min": 1.0, "capped_limits": ()},
        {"rate_per_min": 1.0, "curves": ()},
        {"rate_per_min": 1.0, "full_gpu_speedup": 0.0},
    ],
)
def test_bad_specs_raise_config_error(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        WorkloadSpec(**options)  # type: ignore[arg-type]


def test_unknown_profile_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="alibaba-day"):
        WorkloadSpec(profile="nope")


def test_spec_is_frozen() -> None:
    spec = WorkloadSpec(rate_per_min=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.hours = 2.0  # type: ignore[misc]


@settings(max_examples=EXAMPLES)
@given(seed=st.integers(0, 2**32), rate=st.floats(0.05, 3.0), share=st.floats(0.0, 1.0))
def test_generated_jobs_are_valid_traces(seed: int, rate: float, share: float) -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=rate, hours=2, inference_share=share), seed)
    for job in jobs:
        assert all(d > 0 for d in job.durations_s)
        assert job.deadline_s >= job.arrival_s >= 0
        assert all(a >= b for a, b in zip(job.durations_s[:5], job.durations_s[1:5], strict=False))
    if jobs:  # the trace validator accepts them and rebuilds them exactly
        assert frame_to_jobs(jobs_to_frame(jobs), "generated") == jobs


def test_an_offset_and_an_id_prefix_shift_the_same_draws() -> None:
    spec = WorkloadSpec(rate_per_min=0.5, hours=2.0)
    plain = generate_jobs(spec, 7)
    shifted = generate_jobs(spec, 7, offset_s=86_400.0, id_prefix="d001-")
    assert len(plain) == len(shifted) > 0
    for a, b in zip(plain, shifted, strict=True):
        assert b.job_id == "d001-" + a.job_id
        # Exactly the float sum, as adding the offset job by job would give.
        assert b.arrival_s == a.arrival_s + 86_400.0 and b.deadline_s == a.deadline_s + 86_400.0
        same = (a.kind, a.scaling, a.durations_s, a.dur_full_s)
        assert (b.kind, b.scaling, b.durations_s, b.dur_full_s) == same
