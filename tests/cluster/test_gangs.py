"""Jobs of several GPUs on the cluster (gangs): hand-computed runs on whole GPUs (MIG disabled)."""

from __future__ import annotations

import pytest

from wattsched.cluster import ClusterOptions, ClusterSpec, simulate_cluster
from wattsched.cluster.gangs import choose_members
from wattsched.cluster.result import ClusterResult
from wattsched.errors import ConfigError
from wattsched.workload.job import Job, JobKind, Scaling

WHOLE_GPUS = ClusterOptions(
    placement="first-fit", partitioner="static", configuration="no-mig", policy="edf-fs", record_jobs=True
)
IDLE_W, BUSY_W = 40.0, 248.5  # A100-40GB with MIG disabled


def spans(result: ClusterResult) -> dict[tuple[str, int], tuple[float, float]]:
    """(job, GPU) -> (start, completion) from every GPU's own records (a gang has one on each of its GPUs)."""
    return {
        (r.job_id, gpu): (r.start_s, r.completion_s)
        for gpu, own in enumerate(result.gpu_results)
        for r in own.records or ()
    }


def job(name: str, arrival_s: float, full_s: float, deadline_s: float, gpus: int = 1) -> Job:
    """A job that runs ``full_s`` on a whole GPU (each of its GPUs)."""
    durations = tuple(7.0 * full_s / g for g in (1, 2, 3, 4, 7))
    return Job(name, arrival_s, deadline_s, JobKind.TRAINING, Scaling.LINEAR, durations, full_s, gpus=gpus)


def test_a_two_gpu_job_waits_for_two_gpus_of_one_server_and_both_end_together() -> None:
    # Two servers of two GPUs: GPUs 0, 1 on server 0, GPUs 2, 3 on server 1. At t = 0, a (100 s), b (200 s)
    # and c (50 s) go first-fit to GPUs 0, 1 and 2. The gang g (2 GPUs, 300 s) arrives at 10: server 0's
    # GPUs are both busy, server 1 has one busy GPU (c, until 50) and one idle: g reserves GPUs 2 and 3 and
    # starts on both at 50, when c ends; both end at 350 (deadline 320: 30 s late). d (10 s) arrives at 20:
    # GPUs 2 and 3 are held, 0 and 1 busy; it queues on the least-loaded GPU, 0, and runs 100-110.
    jobs = [
        job("a", 0, 100, 1000),
        job("b", 0, 200, 1000),
        job("c", 0, 50, 1000),
        job("g", 10, 300, 320, gpus=2),
        job("d", 20, 10, 1000),
    ]
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(2, 2, "a100-40gb"), WHOLE_GPUS)
    assert spans(result) == {
        ("a", 0): (0.0, 100.0),
        ("d", 0): (100.0, 110.0),
        ("b", 1): (0.0, 200.0),
        ("c", 2): (0.0, 50.0),
        ("g", 2): (50.0, 350.0),
        ("g", 3): (50.0, 350.0),
    }
    # One job of five, counted once: 30 s late.
    assert (result.jobs, result.late_jobs, result.max_tardiness_s) == (5, 1, 30.0)
    assert result.avg_tardiness_s == 30.0 / 5
    assert list(result.tardiness_s) == [0.0, 0.0, 0.0, 30.0, 0.0]
    assert result.gpu_jobs == (2, 1, 2, 1)
    # Energy to the end at 350 s: busy 110 + 200 + 350 + 300 = 960 GPU-seconds, idle 4 * 350 - 960 = 440.
    assert result.end_s == 350.0
    assert result.energy_j == pytest.approx(960 * BUSY_W + 440 * IDLE_W)


def test_a_single_job_waits_while_gangs_hold_every_gpu() -> None:
    # One server of two GPUs: the gang (2 GPUs, 100 s) starts at 0; s (10 s) arrives at 5 and finds both
    # GPUs held: it waits at the cluster and runs 100-110 on GPU 0.
    jobs = [job("g", 0, 100, 100, gpus=2), job("s", 5, 10, 200)]
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 2, "a100-40gb"), WHOLE_GPUS)
    assert spans(result) == {("g", 0): (0.0, 100.0), ("g", 1): (0.0, 100.0), ("s", 0): (100.0, 110.0)}
    assert (result.jobs, result.late_jobs, result.end_s) == (2, 0, 110.0)
    assert result.energy_j == pytest.approx((100 + 100 + 10) * BUSY_W + (2 * 110 - 210) * IDLE_W)


def test_gangs_start_in_arrival_order_on_the_freest_server() -> None:
    # Two servers of two idle GPUs: g1 takes server 0 at 0; g2 (arriving at 1) takes server 1 at once;
    # g3 (at 2) waits for the first to end (g2 at 51) and runs 51-61 on server 1.
    jobs = [job("g1", 0, 100, 1000, gpus=2), job("g2", 1, 50, 1000, gpus=2), job("g3", 2, 10, 1000, gpus=2)]
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(2, 2, "a100-40gb"), WHOLE_GPUS)
    assert spans(result) == {
        ("g1", 0): (0.0, 100.0),
        ("g1", 1): (0.0, 100.0),
        ("g2", 2): (1.0, 51.0),
        ("g2", 3): (1.0, 51.0),
        ("g3", 2): (51.0, 61.0),
        ("g3", 3): (51.0, 61.0),
    }
    assert result.jobs == 3


def test_a_gang_larger_than_every_server_is_refused() -> None:
    with pytest.raises(ConfigError, match="needs 4 GPUs at once; the largest server has 2"):
        simulate_cluster(
            [job("g", 0, 10, 100, gpus=4)], ClusterSpec.homogeneous(3, 2, "a100-40gb"), WHOLE_GPUS
        )


def test_choose_members_prefers_idle_gpus_then_low_load_then_low_server() -> None:
    servers = [[0, 1, 2], [3, 4], [5, 6]]
    loads = [0, 1, 0, 2, 0, 0, 0]
    held = [False] * 7
    assert choose_members(2, servers, loads, held) == (0, 2)  # server 0 has two idle GPUs: lowest index
    held[0] = True
    assert choose_members(2, servers, loads, held) == (5, 6)  # server 0 now has one idle GPU free of gangs
    assert choose_members(3, servers, loads, held) == ()  # no server has three GPUs free of gangs


@pytest.mark.parametrize("placement", ["first-fit", "best-fit", "least-energy", "deadline-aware"])
@pytest.mark.parametrize("power_states", [False, True])
def test_every_gang_runs_on_one_server_starting_and_ending_together(
    placement: str, power_states: bool
) -> None:
    from dataclasses import replace

    import numpy as np

    from wattsched.cluster import PowerStates, preset_spec
    from wattsched.cluster.workloads import cluster_spec
    from wattsched.workload.generators import generate_jobs

    spec = ClusterSpec.homogeneous(2, 4, "a100-40gb")
    draws = np.random.default_rng(1)
    jobs = [
        replace(j, gpus=int(draws.choice([1, 1, 1, 1, 2, 3, 4])))
        for j in generate_jobs(cluster_spec(preset_spec("paper", 2.0), spec.gpus), 5)
    ]
    options = ClusterOptions(
        placement=placement,
        partitioner="static",
        policy="edf-ss-restricted",
        power_states=PowerStates(enabled=power_states),
        compact_every=16,
        record_jobs=True,
    )
    result = simulate_cluster(jobs, spec, options)
    assert result.jobs == len(jobs) and result.records is not None and len(result.records) == len(jobs)
    runs: dict[str, list[tuple[int, float, float]]] = {}
    for gpu, own in enumerate(result.gpu_results):
        for r in own.records or ():
            runs.setdefault(r.job_id, []).append((gpu, r.start_s, r.completion_s))
    server_of = spec.server_of_gpu()
    gangs = [j for j in jobs if j.gpus > 1]
    assert gangs
    for j in jobs:
        members = runs[j.job_id]
        assert len(members) == j.gpus
        assert len({server_of[g] for g, _, _ in members}) == 1
        assert len({start for _, start, _ in members}) == 1 and len({end for _, _, end in members}) == 1
    # A gang's GPUs run nothing else while it runs.
    for j in gangs:
        _, start, end = runs[j.job_id][0]
        held = {g for g, _, _ in runs[j.job_id]}
        for other, members in runs.items():
            for g, s, e in members:
                if g in held and other != j.job_id:
                    assert e <= start + 1e-9 or s >= end - 1e-9, (j.job_id, other)


def test_a_gang_starts_when_its_last_gpu_empties_not_at_the_next_arrival() -> None:
    # One server of two GPUs. a (100 s) runs on GPU 0 from 0; the gang g (2 GPUs, 30 s) arrives at 10,
    # reserves both GPUs and waits for a: it starts at 100, when a ends, and ends at 130, although nothing
    # else happens until e arrives at 500 (it used to start at 500, the next arrival).
    jobs = [job("a", 0.0, 100.0, 1_000.0), job("g", 10.0, 30.0, 1_000.0, gpus=2), job("e", 500.0, 5.0, 900.0)]
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 2), WHOLE_GPUS)
    got = spans(result)
    assert got[("a", 0)] == pytest.approx((0.0, 100.0))
    assert got[("g", 0)] == pytest.approx((100.0, 130.0)) and got[("g", 1)] == pytest.approx((100.0, 130.0))
    assert got[("e", 0)] == pytest.approx((500.0, 505.0))
    assert result.max_tardiness_s == 0.0
