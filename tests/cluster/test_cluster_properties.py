"""Cluster invariants under hypothesis: a one-GPU cluster is ``simulate`` bit for bit; on many GPUs no job is
lost or run twice, no slice is double-booked (each GPU's run passes the shipped checker), a server is off
only while all its GPUs are idle, and energy is the sum of the per-GPU integrals, host power and turn-ons."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import given
from hypothesis import strategies as st

from wattsched.cluster import (
    PLACEMENTS,
    ClusterOptions,
    ClusterSpec,
    PowerStates,
    ServerSpec,
    simulate_cluster,
)
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import POLICIES, simulate
from wattsched.mig.checks import check_run
from wattsched.workload.job import Job, JobKind, Scaling

A100 = load_gpu("a100-40gb")
CONFIGS: list[int | str] = [*A100.configuration_ids, "no-mig"]
SPEEDUPS = [
    (1.0, 2.0, 3.0, 4.0, 7.0),
    (1.0, 2.0, 2.0, 2.0, 2.0),
    (1.0, 1.682, 2.280, 2.828, 4.304),
]


@st.composite
def traces(draw: st.DrawFn, max_jobs: int = 14, span: int = 900) -> list[Job]:
    n = draw(st.integers(1, max_jobs))
    jobs = []
    for i in range(n):
        arrival = float(draw(st.integers(0, span)))  # whole seconds: simultaneous arrivals happen
        base = float(draw(st.integers(1, 600)))
        speedup = draw(st.sampled_from(SPEEDUPS))
        durations = tuple(base / s for s in speedup)
        full = durations[4] / 1.06 if speedup[4] == 7.0 else durations[4]
        slack = draw(st.sampled_from([0.0, 1.0, 1.25, 1.5, 3.0]))
        kind = draw(st.sampled_from([JobKind.INFERENCE, JobKind.TRAINING]))
        jobs.append(
            Job(f"j{i}", arrival, arrival + slack * durations[4], kind, Scaling.MEASURED, durations, full)
        )
    return jobs


@given(
    traces(),
    st.sampled_from(CONFIGS),
    st.sampled_from(POLICIES.available()),
    st.sampled_from(PLACEMENTS.available()),
    st.sampled_from([None, 400.0, 5000.0]),
    st.sampled_from([0, 1, 3]),
)
def test_one_gpu_cluster_is_simulate_bit_for_bit(
    jobs: list[Job], config: int | str, policy: str, placement: str, horizon: float | None, compact: int
) -> None:
    expected = simulate(jobs, config, policy, horizon_s=horizon, record_jobs=True)
    options = ClusterOptions(
        placement=placement, configuration=config, policy=policy, record_jobs=True, compact_every=compact
    )
    got = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 1), options, horizon_s=horizon)
    bare = dataclasses.replace(expected, records=None)
    assert dataclasses.replace(got.gpu_results[0], records=None) == bare
    assert (
        got.energy_j,
        got.avg_tardiness_s,
        got.max_tardiness_s,
        got.jobs,
        got.late_jobs,
        got.preemptions,
        got.repartitions,
        got.end_s,
    ) == (
        expected.energy_j,
        expected.avg_tardiness_s,
        expected.max_tardiness_s,
        expected.jobs,
        expected.late_jobs,
        expected.preemptions,
        expected.repartitions,
        expected.end_s,
    )
    assert got.records is not None
    assert tuple(r.record for r in got.records) == expected.records


def _check_cluster(jobs: list[Job], spec: ClusterSpec, options: ClusterOptions, power: PowerStates) -> None:
    result = simulate_cluster(jobs, spec, options)
    by_id = {job.job_id: job for job in jobs}
    records = result.records
    assert records is not None
    # No job lost or run twice: every job has exactly one record, on one GPU, and completes.
    assert sorted(r.record.job_id for r in records) == sorted(by_id)
    assert result.jobs == len(jobs) == sum(result.gpu_jobs)
    server_of = spec.server_of_gpu()
    off: dict[int, list[tuple[float, float]]] = {}
    for s, start, end in result.server_off_intervals:
        assert 0 <= start <= end <= result.end_s
        off.setdefault(s, []).append((start, end))
    for g, gpu_result in enumerate(result.gpu_results):
        assert gpu_result.records is not None
        mine = [by_id[r.job_id] for r in gpu_result.records]
        assert sorted(r.record.job_id for r in records if r.gpu == g) == sorted(j.job_id for j in mine)
        # No slice double-booked, work done once, energy re-integrated: the one-GPU checker on this GPU.
        # (Jobs held for a boot reach their GPU later than they arrived: skip the work-conservation part.)
        check_run(mine, gpu_result, gpu=A100, configuration=None)
        for record in gpu_result.records:
            for start, end, _, _ in record.slices:  # a GPU never runs while its server is off
                for a, b in off.get(server_of[g], []):
                    assert end <= a + 1e-9 or start >= b - 1e-9, (g, record.job_id, start, end, a, b)
    # A server turns off only when all its GPUs are idle: no job of it is present at a turn-off (a job
    # arriving at that very time comes after it, as in P2: DRS first, then the slot's arrivals).
    for s, start, _ in result.server_off_intervals:
        for r in records:
            if server_of[r.gpu] == s:
                job = by_id[r.record.job_id]
                assert not (job.arrival_s < start < r.record.completion_s - 1e-9), (s, start, job.job_id)
    # Energy: the per-GPU integrals (engine energy minus idle power while off) + host power + turn-ons.
    gpus_on = [sum(b - a for a, b in off.get(server_of[g], [])) for g in range(spec.gpus)]
    per_gpu = [r.energy_j - A100.power.idle_w * t for r, t in zip(result.gpu_results, gpus_on, strict=True)]
    for mine, theirs in zip(per_gpu, result.gpu_energy_j, strict=True):
        assert math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-6)
    host = power.host_idle_w * sum(
        result.end_s - sum(b - a for a, b in off.get(s, [])) for s in range(len(spec.servers))
    )
    turn_ons = sum(1 for _, _, end in result.server_off_intervals if end < result.end_s)
    assert result.server_turn_ons >= turn_ons
    overhead = result.server_turn_ons * power.turn_on_j_per_gpu * spec.servers[0].gpus
    assert math.isclose(result.energy_overhead_j, overhead, rel_tol=1e-12)
    assert math.isclose(result.energy_j, sum(per_gpu) + host + overhead, rel_tol=1e-9, abs_tol=1e-6)
    split = result.energy_run_j + result.energy_idle_j + result.energy_overhead_j
    assert math.isclose(result.energy_j, split, rel_tol=1e-9, abs_tol=1e-6)
    if not power.enabled:
        assert result.server_off_intervals == () and result.server_turn_ons == 0
        return
    # ... and a server idle for its idle slots does turn off then (P2's DRS).
    wait = power.slot_s * (power.idle_slots or 0)
    for s in range(len(spec.servers)):
        present = sorted(
            (by_id[r.record.job_id].arrival_s, r.record.completion_s)
            for r in records
            if server_of[r.gpu] == s
        )
        idle_from, gaps = 0.0, []
        for arrival, completion in present:
            if arrival > idle_from:
                gaps.append((idle_from, arrival))
            idle_from = max(idle_from, completion)
        gaps.append((idle_from, math.inf))
        starts = [a for t, a, _ in result.server_off_intervals if t == s]
        for a, b in gaps:
            if a + wait < min(b, result.end_s):
                assert any(math.isclose(x, a + wait, abs_tol=1e-6) for x in starts), (s, a, b, starts)


@given(
    traces(max_jobs=24, span=3000),
    st.sampled_from(PLACEMENTS.available()),
    st.sampled_from(POLICIES.available()),
    st.sampled_from([3, 6, "no-mig"]),
    st.sampled_from(["static", "day-night"]),
    st.booleans(),
    st.sampled_from([(2, 2), (3, 1), (1, 3)]),
    st.sampled_from([0.0, 30.0]),
)
def test_many_gpus_keep_every_invariant(
    jobs: list[Job],
    placement: str,
    policy: str,
    config: int | str,
    partitioner: str,
    power_on: bool,
    shape: tuple[int, int],
    turn_on_s: float,
) -> None:
    power = PowerStates(enabled=power_on, slot_s=60.0, idle_slots=1, turn_on_s=turn_on_s, host_idle_w=25.0)
    options = ClusterOptions(
        placement=placement,
        partitioner=partitioner,
        configuration=config,
        policy=policy,
        power_states=power,
        record_jobs=True,
        compact_every=2,
    )
    _check_cluster(jobs, ClusterSpec.homogeneous(*shape), options, power)


def test_heterogeneous_cluster_keeps_the_job_count() -> None:
    jobs = [
        Job(
            f"j{i}",
            10.0 * i,
            10.0 * i + 900.0,
            JobKind.INFERENCE,
            Scaling.LINEAR,
            tuple(700.0 / g for g in (1, 2, 3, 4, 7)),
            100.0 / 1.06,
        )
        for i in range(40)
    ]
    spec = ClusterSpec((ServerSpec("a100-40gb", 2), ServerSpec("h200-141gb", 2)))
    result = simulate_cluster(jobs, spec, ClusterOptions(placement="least-energy", record_jobs=True))
    assert result.jobs == 40 and sum(result.gpu_jobs) == 40
    assert result.records is not None and {r.gpu for r in result.records} <= {0, 1, 2, 3}
