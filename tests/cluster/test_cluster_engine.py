"""The cluster engine on hand-computed cases: DRS power states, placement on a hand-built pool, clocks,
partitioners per GPU and their repartition blackout (a one-GPU cluster is run_day), compaction, ordering and
the paper preset scaled to N GPUs."""

from __future__ import annotations

import math
from array import array
from dataclasses import replace

import pytest

from wattsched.cluster import (
    PLACEMENTS,
    ClusterOptions,
    ClusterSimulation,
    ClusterSpec,
    GpuPool,
    PowerStates,
    ServerSpec,
    clock_schedule,
    engine,
    preset_spec,
    simulate_cluster,
    stream_jobs,
)
from wattsched.cluster.workloads import cluster_spec
from wattsched.errors import ConfigError, UnknownNameError
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import simulate
from wattsched.mig.partition import PARTITIONERS, Decision, run_day
from wattsched.mig.partition.runner import decide_epoch
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling

A100 = load_gpu("a100-40gb")
H200 = load_gpu("h200-141gb")


def linear_job(
    name: str, arrival_s: float, dur_7g_s: float, deadline_s: float, kind: JobKind = JobKind.INFERENCE
) -> Job:
    """A linear job: dur_g = 7 · dur_7g / g (so dur_3g = 7/3 · dur_7g)."""
    durations = tuple(7.0 * dur_7g_s / g for g in (1, 2, 3, 4, 7))
    return Job(name, arrival_s, deadline_s, kind, Scaling.LINEAR, durations, dur_7g_s / 1.06)


def test_power_states_turn_an_idle_server_off_and_boot_it_for_work() -> None:
    # One A100 in configuration 1 (one 7g slice). A runs 0-100 s at P(7) = 248.5 W; the server idles at
    # 40 W until 100 + 2 slots x 60 s = 220 s and turns off. B arrives at 1000 s: the server boots
    # (5,400 J, 60 s), B arrives on the GPU at 1060 s and runs to 1160 s (the end: the last event).
    power = PowerStates(enabled=True, slot_s=60.0, idle_slots=2, turn_on_j_per_gpu=5400.0, turn_on_s=60.0)
    jobs = [linear_job("a", 0.0, 100.0, 1000.0), linear_job("b", 1000.0, 100.0, 1150.0)]
    options = ClusterOptions(configuration=1, policy="edf-fs", power_states=power, record_jobs=True)
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 1), options)
    assert result.end_s == 1160.0
    assert result.server_turn_ons == 1 and result.fallback_placements == 1
    assert result.server_off_intervals == ((0, 220.0, 1060.0),)
    assert result.energy_overhead_j == 5400.0
    assert result.energy_run_j == pytest.approx(2 * 248.5 * 100.0)
    assert result.energy_idle_j == pytest.approx(40.0 * 120.0)
    assert result.energy_j == pytest.approx(2 * 24_850.0 + 4_800.0 + 5_400.0)
    assert result.gpus_on == ((0.0, 1), (220.0, 0), (1060.0, 1))
    # B waited for the boot: it starts at 1060 s and is 10 s late.
    assert result.records is not None
    b = result.records[1].record
    assert (b.start_s, b.completion_s, b.tardiness_s) == (1060.0, 1160.0, 10.0)
    assert result.avg_tardiness_s == 5.0


def test_power_states_off_keep_every_server_on() -> None:
    jobs = [linear_job("a", 0.0, 100.0, 1000.0), linear_job("b", 1000.0, 100.0, 1150.0)]
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 1), ClusterOptions(configuration=1))
    # Always on: 200 s busy at 248.5 W, 960 s idle at 40 W, up to the last completion at 1100 s.
    assert result.end_s == 1100.0
    assert result.energy_j == pytest.approx(200 * 248.5 + 900 * 40.0)
    assert result.server_turn_ons == 0 and result.server_off_intervals == ()


def test_p2_rule_gives_the_idle_wait() -> None:
    power = PowerStates(enabled=True)
    # A100 server of 8: rho = floor(8 x 5,400 J / (8 x 40 W x 60 s)) = 2;
    # H200: floor(5,400 / (84.4 x 60)) = 1.
    assert power.idle_slots_for(8 * 40.0, 8) == 2
    assert power.idle_slots_for(8 * 84.4, 8) == 1
    assert PowerStates(idle_slots=5).idle_slots_for(1.0, 1) == 5


def _pool() -> GpuPool:
    # GPU 0: configuration 2 (4g + 3g) with the 4g busy (state 4), the 3g free; GPU 1: idle, 3g and 4g free;
    # GPU 2: unavailable.
    pool = GpuPool([A100], [0, 0, 0])
    pool.update(0, 4, 1 << 3)
    pool.update(1, 0, (1 << 3) | (1 << 4))
    return pool


@pytest.mark.parametrize(
    ("deadline_s", "expected"),
    [
        # dur_3g = 233.3 s, dur_4g = 175 s. Deadline 250 s: both sizes meet it.
        (250.0, {"first-fit": 0, "best-fit": 0, "least-energy": 0, "deadline-aware": 0}),
        # Deadline 200 s: only the 4g (on GPU 1) meets it.
        (200.0, {"first-fit": 1, "best-fit": 1, "least-energy": 0, "deadline-aware": 1}),
        # Deadline 100 s: none meets it; best-fit and deadline-aware take the fastest free slice (4g).
        (100.0, {"first-fit": 0, "best-fit": 1, "least-energy": 0, "deadline-aware": 1}),
    ],
)
def test_placements_on_a_hand_built_pool(deadline_s: float, expected: dict[str, int]) -> None:
    job = linear_job("j", 0.0, 100.0, deadline_s)
    pool = _pool()
    for name, gpu in expected.items():
        assert PLACEMENTS.make(name).choose(job, 0.0, pool) == gpu, name
    # Least energy: GPU 0 adds P(7) - P(4) = 4.6 W for 233.3 s (1,073 J) where GPU 1 would add 165.3 W
    # (3g) or 203.9 W (4g) from idle.
    assert pool.marginal_w(0, 4, 3, "inference") == pytest.approx(248.5 - 243.9)
    assert pool.marginal_w(0, 0, 4, "inference") == pytest.approx(243.9 - 40.0)


def test_an_empty_pool_gives_no_gpu_and_updates_are_reversible() -> None:
    pool = GpuPool([A100], [0, 0])
    job = linear_job("j", 0.0, 100.0, 1000.0)
    in_pool = [
        name for name in PLACEMENTS.available() if not getattr(PLACEMENTS.make(name), "uses_jobs", False)
    ]
    assert "first-fit" in in_pool and "fewest-jobs" not in in_pool
    assert all(PLACEMENTS.make(name).choose(job, 0.0, pool) == -1 for name in in_pool)
    # fewest-jobs looks at every GPU, free slice or not: both have none, the first is taken.
    assert PLACEMENTS.make("fewest-jobs").choose(job, 0.0, pool) == 0
    pool.update(1, 2, 1 << 7)
    pool.update(1, 3, 1 << 7)
    pool.update(1, 3, 0)
    assert pool.by_size == {7: 0} and pool.by_class == {}
    assert not pool.available(1)


def test_simultaneous_arrivals_spread_over_gpus() -> None:
    # A GPU that was just given a job is not offered again until it has processed that arrival.
    jobs = [linear_job(f"j{i}", 0.0, 100.0, 1000.0) for i in range(3)]
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 3), ClusterOptions(record_jobs=True))
    assert result.records is not None
    assert [r.gpu for r in result.records] == [0, 1, 2]


def test_jobs_beyond_free_slices_go_to_the_least_loaded_gpu() -> None:
    jobs = [linear_job(f"j{i}", 0.0, 1000.0, 1e6) for i in range(5)]
    options = ClusterOptions(configuration=1, record_jobs=True)  # one slice per GPU
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 2), options)
    assert result.records is not None
    assert [r.gpu for r in result.records] == [0, 1, 0, 1, 0]
    assert result.fallback_placements == 3


def test_clock_levels_slow_a_job_with_slack_and_keep_a_tight_one_on_time() -> None:
    schedule = clock_schedule(H200)
    assert schedule is not None and clock_schedule(A100) is None
    table = H200.power.table(None)
    idle, busy = table.power_w[0], table.power_w[7]  # one inference job on the 7g slice
    options = ClusterOptions(configuration=1, policy="edf-fs", clocks=True, record_jobs=True)
    spec = ClusterSpec((ServerSpec("h200-141gb", 1),))
    # Slack: the energy-optimal level (P2's Alg. 1 snapped to a level).
    loose = simulate_cluster([linear_job("a", 0.0, 1000.0, 1e6)], spec, options)
    level = schedule.optimum_level
    took = 1000.0 / schedule.speed[level]
    assert loose.end_s == pytest.approx(took)
    assert loose.energy_j == pytest.approx(idle * took + (busy - idle) * schedule.power_scale[level] * took)
    assert loose.clock_time_s[schedule.sm_mhz[level]] == pytest.approx(took)
    # Tight (deadline 1.1 x the default time): the slowest level that still meets it.
    tight = simulate_cluster([linear_job("a", 0.0, 1000.0, 1100.0)], spec, options)
    assert tight.late_jobs == 0 and tight.end_s <= 1100.0
    chosen = schedule.level_for(1.1)
    assert schedule.time_factor[chosen] <= 1.1 < schedule.time_factor[chosen + 1]
    assert tight.end_s == pytest.approx(1000.0 * schedule.time_factor[chosen])
    # Impossible (deadline below the default time): the fastest level, as without clocks.
    late = simulate_cluster([linear_job("a", 0.0, 1000.0, 900.0)], spec, options)
    assert late.end_s == pytest.approx(1000.0) and late.late_jobs == 1


def test_day_night_partitioner_runs_per_gpu() -> None:
    jobs = generate_jobs(WorkloadSpec(profile="alibaba-day", rate_multiplier=2.5 * 4), 2)
    options = ClusterOptions(partitioner="day-night", record_jobs=True)
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(2, 2), options, horizon_s=86_400.0)
    assert result.repartitions == sum(r.repartitions for r in result.gpu_results)
    assert all(r.repartitions >= 1 for r in result.gpu_results)  # day (cfg 6) after night (cfg 2)
    assert all(r.blackout_s == pytest.approx(4.0 * r.repartitions) for r in result.gpu_results)


def test_repartition_s_sets_the_blackout_and_delays_the_job_behind_it() -> None:
    # One A100 under day-night: night configuration 2 (4g + 3g), day 6 (2g + 2g + 3g) from 05:00. A runs on
    # the 3g slice 0-70 s (7 x 30 / 3). B arrives at 18,000 s, the first epoch of the day: the GPU
    # repartitions, and B starts on the 3g slice when the blackout ends, 18,000 + repartition_s.
    jobs = [linear_job("a", 0.0, 30.0, 1000.0), linear_job("b", 18_000.0, 30.0, 18_100.0)]
    runs = {}
    for seconds in (None, 4.0, 10.0):
        options = ClusterOptions(partitioner="day-night", record_jobs=True, repartition_s=seconds)
        runs[seconds] = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 1), options)
    assert runs[None].to_dict() == runs[4.0].to_dict()  # the catalogue's 4 s
    for seconds in (4.0, 10.0):
        result = runs[seconds]
        assert result.repartitions == 1 and result.blackout_s == seconds
        assert result.records is not None
        b = result.records[1].record
        assert (b.start_s, b.completion_s) == (18_000.0 + seconds, 18_070.0 + seconds)
    # 6 s more of blackout: B ends 6 s later, the GPU idling at 40 W meanwhile.
    assert runs[10.0].end_s - runs[4.0].end_s == 6.0
    assert runs[10.0].energy_j - runs[4.0].energy_j == pytest.approx(6.0 * A100.power.table(None).power_w[0])


def test_repartition_s_per_model_leaves_the_others_their_own() -> None:
    spec = ClusterSpec((ServerSpec("a100-40gb", 1, "a"), ServerSpec("h200-141gb", 1, "h")))
    jobs = generate_jobs(WorkloadSpec(profile="alibaba-day", rate_multiplier=2.5 * 2), 2)
    options = ClusterOptions(partitioner="day-night", repartition_s={"h200-141gb": 30.0})
    result = simulate_cluster(jobs, spec, options, horizon_s=86_400.0)
    a100, h200 = result.gpu_results
    assert a100.repartitions >= 1 and h200.repartitions >= 1
    assert a100.blackout_s == 4.0 * a100.repartitions and h200.blackout_s == 30.0 * h200.repartitions
    assert result.blackout_s == a100.blackout_s + h200.blackout_s
    with pytest.raises(ConfigError, match=r"h100-80gb .*: a100-40gb, h200-141gb"):
        ClusterSimulation(spec, ClusterOptions(repartition_s={"h100-80gb": 1.0}))
    for bad in (-1.0, math.inf, math.nan, {"a100-40gb": -2.0}, True):
        with pytest.raises(ConfigError, match="repartition_s"):
            ClusterOptions(repartition_s=bad)


@pytest.mark.parametrize("repartition_s", [0.0, 4.0, 600.0])
def test_a_one_gpu_cluster_under_day_night_is_run_day(
    monkeypatch: pytest.MonkeyPatch, repartition_s: float
) -> None:
    # The same decision epochs, choices and repartitions, and the same jobs, energy and tardiness, whatever
    # the blackout (600 s shifts the epochs that follow each repartition).
    jobs = generate_jobs(WorkloadSpec(profile="alibaba-day", rate_multiplier=2.5), 4)
    day = run_day(
        jobs,
        PARTITIONERS.make("day-night"),
        horizon_s=86_400.0,
        gpu=replace(A100, repartition_s=repartition_s),
        record_jobs=True,
    )
    decisions: list[Decision] = []
    monkeypatch.setattr(engine, "decide_epoch", lambda sim, decider: decide_epoch(sim, decider, decisions))
    options = ClusterOptions(partitioner="day-night", repartition_s=repartition_s, record_jobs=True)
    cluster = simulate_cluster(jobs, ClusterSpec.homogeneous(1, 1), options, horizon_s=86_400.0)
    assert tuple(decisions) == day.decisions and day.result.repartitions == 2
    assert cluster.records is not None and tuple(r.record for r in cluster.records) == day.result.records
    assert (cluster.energy_j, cluster.avg_tardiness_s, cluster.end_s) == (
        day.result.energy_j,
        day.result.avg_tardiness_s,
        day.result.end_s,
    )
    assert cluster.repartitions == 2 and cluster.blackout_s == day.result.blackout_s == 2 * repartition_s


def test_compaction_changes_nothing() -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=4.0 * 2, hours=6.0), 5)  # two overloaded GPUs
    results = []
    for every in (0, 1, 7):
        options = ClusterOptions(policy="llf", placement="best-fit", compact_every=every, record_jobs=True)
        results.append(simulate_cluster(jobs, ClusterSpec.homogeneous(1, 2), options))
    first = results[0]
    for other in results[1:]:
        assert other.records == first.records
        assert other.to_dict() == first.to_dict()
        assert other.tardiness_s == first.tardiness_s
    assert first.tardiness_s == array("d", [r.record.tardiness_s for r in first.records or ()])


def test_jobs_must_come_in_arrival_order_when_streamed() -> None:
    jobs = [linear_job("a", 10.0, 1.0, 20.0), linear_job("b", 5.0, 1.0, 20.0)]
    with pytest.raises(ConfigError, match="arrival order"):
        ClusterSimulation(ClusterSpec.homogeneous(1, 1)).run(iter(jobs))
    # A list is sorted like simulate does.
    assert simulate_cluster(jobs, ClusterSpec.homogeneous(1, 1)).jobs == 2


def test_names_that_are_not_registered_are_refused() -> None:
    with pytest.raises(UnknownNameError, match="first-fit"):
        ClusterOptions(placement="random")
    with pytest.raises(UnknownNameError, match="static"):
        ClusterOptions(partitioner="oracle")
    with pytest.raises(UnknownNameError, match="edf-fs"):
        ClusterOptions(policy="fifo")
    with pytest.raises(ConfigError, match="servers"):
        ClusterSpec.homogeneous(0, 8)
    with pytest.raises(ConfigError, match="at least one server"):
        ClusterSpec(())


def test_paper_preset_scales_with_gpus_and_streams_by_day() -> None:
    per_gpu = preset_spec("paper", hours=48.0)
    assert per_gpu.rate_multiplier == 2.5 and per_gpu.profile == "alibaba-day"
    assert cluster_spec(per_gpu, 4).rate_multiplier == 10.0
    jobs = list(stream_jobs(per_gpu, 4, seed=3))
    again = list(stream_jobs(per_gpu, 4, seed=3))
    assert jobs == again
    arrivals = [j.arrival_s for j in jobs]
    assert arrivals == sorted(arrivals) and arrivals[0] >= 0 and arrivals[-1] < 2 * 86_400.0
    assert len({j.job_id for j in jobs}) == len(jobs)
    # ~516 jobs per GPU-day at the paper preset: 4 GPUs x 2 days.
    assert 3_600 < len(jobs) < 4_700
    day_two = [j for j in jobs if j.arrival_s >= 86_400.0]
    assert day_two and all(j.job_id.startswith("d001-") for j in day_two)


def test_a_cluster_matches_one_gpu_for_every_policy_with_the_paper_preset() -> None:
    jobs = generate_jobs(cluster_spec(preset_spec("paper"), 1), 9)
    for policy in ("edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"):
        expected = simulate(jobs, 3, policy, horizon_s=86_400.0)
        got = simulate_cluster(
            jobs, ClusterSpec.homogeneous(1, 1), ClusterOptions(policy=policy), horizon_s=86_400.0
        )
        assert (got.energy_j, got.avg_tardiness_s, got.end_s) == (
            expected.energy_j,
            expected.avg_tardiness_s,
            expected.end_s,
        )
        assert math.isfinite(got.energy_j)


def test_fewest_jobs_spreads_jobs_where_first_fit_packs_them() -> None:
    # Four long jobs, one every 10 s, on 1 server x 2 A100s in configuration 2 (4g + 3g). First-fit takes
    # the first GPU with a free slice: GPU 0 until both its slices are busy, then GPU 1. Fewest-jobs takes
    # the GPU with the fewest jobs, the first on ties: 0, 1, 0, 1.
    jobs = [linear_job(f"j{i}", 10.0 * i, 1000.0, 1e6) for i in range(4)]
    spec = ClusterSpec.homogeneous(1, 2)
    placed = {}
    for name in ("first-fit", "fewest-jobs"):
        options = ClusterOptions(placement=name, configuration=2, record_jobs=True)
        result = simulate_cluster(jobs, spec, options)
        assert result.records is not None and result.fallback_placements == 0
        placed[name] = [r.gpu for r in result.records]
    assert placed == {"first-fit": [0, 0, 1, 1], "fewest-jobs": [0, 1, 0, 1]}


def test_fewest_jobs_boots_an_idle_off_server() -> None:
    # One A100 (configuration 1) per server. A runs 0-100 s on server 0; server 1, idle, turns off after
    # 2 slots (120 s). B arrives at 1000 s: server 0 is off too (since 220 s); both have no job, so B goes
    # to the first, which boots: B starts at 1060 s.
    power = PowerStates(enabled=True, slot_s=60.0, idle_slots=2, turn_on_j_per_gpu=5400.0, turn_on_s=60.0)
    jobs = [linear_job("a", 0.0, 100.0, 1000.0), linear_job("b", 1000.0, 100.0, 2000.0)]
    options = ClusterOptions(
        placement="fewest-jobs", configuration=1, policy="edf-fs", power_states=power, record_jobs=True
    )
    result = simulate_cluster(jobs, ClusterSpec.homogeneous(2, 1), options)
    assert result.records is not None
    assert [r.gpu for r in result.records] == [0, 0]
    assert result.server_turn_ons == 1 and result.fallback_placements == 0
    assert result.records[1].record.start_s == 1060.0
