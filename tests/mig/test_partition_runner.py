"""run_day through the real simulator: the repartition mechanism on a hand-made trace, and the baselines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig.partition import PARTITIONERS, run_day
from wattsched.mig.partition.evaluate import evaluate_policy
from wattsched.mig.partition.runner import Decision, decide_epoch, drive
from wattsched.mig.simulator import MigSimulation
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling


def _linear(job_id: str, arrival_s: float, deadline_s: float, dur_1g_s: float) -> Job:
    durations = tuple(dur_1g_s / g for g in (1, 2, 3, 4, 7))
    return Job(
        job_id, arrival_s, deadline_s, JobKind.TRAINING, Scaling.LINEAR, durations, durations[-1] / 1.06
    )


@dataclass
class _SwitchOnce:
    """Start on ``initial``; at the first decision at or after ``at_s`` switch to ``target`` and stay."""

    initial: int
    target: int
    at_s: float
    scheduler: str = "edf-ss-restricted"
    name: str = "switch-once"

    def reset(self, gpu: Any, seed: int | None = None) -> None:
        del gpu, seed

    def initial_configuration(self) -> int:
        return self.initial

    def decide(self, snapshot: Any) -> int:
        return self.target if snapshot.now_s >= self.at_s else snapshot.configuration


# A (7g: 100 s) arrives at 0 on cfg 1; B arrives at 50 and waits (d_B > d_A, so no preemption).
# At B's arrival the policy switches to cfg 12 (seven 1g slices).
JOBS = [_linear("A", 0.0, 1000.0, 700.0), _linear("B", 50.0, 2050.0, 700.0)]


def test_blackout_costs_four_seconds_at_idle_power_and_preempts_the_running_job() -> None:
    run = run_day(JOBS, _SwitchOnce(1, 12, 50.0), horizon_s=0.0)
    result: Any = run.result
    # [0, 50): A on 7g, u = 7, 248.5 W -> 12,425 J; A keeps 50/100 = half of its work
    # [50, 54): blackout, no slice, 40 W -> 160 J
    # [54, 404): A (0.5 x 700 s on 1g) and B on two 1g slices, u = 2, 160 W -> 56,000 J
    # [404, 754): B alone, u = 1, 119 W -> 41,650 J
    assert result.energy_j == pytest.approx(12_425 + 160 + 56_000 + 41_650)
    assert result.end_s == pytest.approx(754.0)
    assert result.blackout_s == pytest.approx(4.0)
    assert result.busy_time_s[0] == pytest.approx(4.0)  # the only idle time is the blackout
    assert result.repartitions == 1
    assert result.preemptions == 1  # exactly the running job A; the waiting B is not preempted
    assert result.avg_tardiness_s == 0.0
    assert [(d.time_s, d.configuration, d.repartitioned) for d in run.decisions] == [
        (0.0, 1, False),
        (50.0, 12, True),
        (pytest.approx(404.0), 12, False),
        (pytest.approx(754.0), 12, False),
    ]


def test_deadline_shift_mode_has_no_blackout() -> None:
    run = run_day(JOBS, _SwitchOnce(1, 12, 50.0), horizon_s=0.0, repartition_mode="deadline_shift")
    result: Any = run.result
    # as above without the 4 s gap: 12,425 + 56,000 (50..400) + 41,650 (400..750)
    assert result.energy_j == pytest.approx(12_425 + 56_000 + 41_650)
    assert result.blackout_s == 0.0 and result.repartitions == 1 and result.preemptions == 1


def test_choosing_the_current_configuration_costs_nothing() -> None:
    stay = run_day(JOBS, _SwitchOnce(1, 1, 0.0), horizon_s=0.0).result
    fixed = run_day(JOBS, PARTITIONERS.make("static", configuration=1), horizon_s=0.0).result
    assert stay == fixed
    assert stay.repartitions == 0 and stay.blackout_s == 0.0


def test_day_night_repartitions_twice_a_day_and_policies_are_deterministic() -> None:
    rows = evaluate_policy("day-night", PARTITIONERS.make("day-night"), range(2), seed=11)
    assert [r["repartitions"] for r in rows] == [2, 2]
    per_hour = rows[0]["repartitions_per_hour"]
    assert len(per_hour) == 24 and per_hour[5] == 1 and per_hour[17] == 1 and sum(per_hour) == 2
    again = evaluate_policy("day-night", PARTITIONERS.make("day-night"), range(2), seed=11)
    assert rows == again
    # Fig. 11 array: the "day" role (6th configuration) holds the 08-12 h interval all day long
    table = rows[0]["configuration_time_s"]
    day = rows[0]["configurations"].index(str(load_gpu(None).role("day")))
    assert len(table) == 6 and table[2][day] == pytest.approx(4 * 3600.0)
    assert sum(map(sum, table)) == pytest.approx(86_400.0)


def test_lookahead_never_sees_future_jobs() -> None:
    # A plan is made from the snapshot alone: the same decisions result whatever comes after the decision.
    policy = PARTITIONERS.make("lookahead")
    early = run_day(JOBS[:1], policy, horizon_s=0.0).decisions[0]
    with_future = run_day(
        [*JOBS[:1], _linear("late", 5000.0, 9000.0, 70.0)], policy, horizon_s=0.0
    ).decisions[0]
    assert early == with_future


@pytest.mark.parametrize(("repartition_s", "chosen"), [(None, 1), (4.0, 1), (20.0, 5)])
def test_lookahead_charges_a_change_its_repartition_s_option_or_the_gpus(
    repartition_s: float | None, chosen: int
) -> None:
    # A linear job (70 s on a 1g) at 0, due at 15 s, on configuration 5 (two 3g): there it ends at 23.3 s,
    # 8.3 s late; on configuration 1 (one 7g) it takes 10 s after the change: on time after the A100's 4 s
    # (and on less energy), 15 s late after 20 s, which costs more than the 8.3 s (lateness dominates).
    options = {} if repartition_s is None else {"repartition_s": repartition_s}
    policy = PARTITIONERS.make("lookahead", candidates=(5, 1), initial=5, **options)
    run = run_day([_linear("j", 0.0, 15.0, 70.0)], policy, horizon_s=0.0)
    assert run.decisions[0] == Decision(0.0, chosen, chosen != 5)


def test_lookahead_refuses_a_negative_repartition_s() -> None:
    with pytest.raises(ConfigError, match="repartition_s"):
        PARTITIONERS.make("lookahead", repartition_s=-1.0)


def test_lookahead_with_sampled_arrivals_is_seeded() -> None:
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    spec = WorkloadSpec(profile="alibaba-day", hours=2.0)
    jobs = generate_jobs(spec, 8)
    policy = PARTITIONERS.make(
        "lookahead", sampled_days=2, window_s=600.0, candidates=(1, 2, 3, 6), workload=spec
    )
    first = run_day(jobs, policy, horizon_s=spec.horizon_s, seed=1)
    second = run_day(jobs, policy, horizon_s=spec.horizon_s, seed=1)
    assert first == second
    assert {d.configuration for d in first.decisions} <= {1, 2, 3, 6}


def test_drive_stops_at_until_and_when_the_decider_hands_an_epoch_back() -> None:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=2.0), 5)

    class Alternate:
        def __init__(self, stop_after: int) -> None:
            self.calls = 0
            self.stop_after = stop_after

        def decide(self, snapshot: object) -> int | None:
            self.calls += 1
            return None if self.calls > self.stop_after else (3 if self.calls % 2 else 5)

    sim = MigSimulation(jobs, 3, "edf-ss-restricted")
    log: list[Decision] = []
    assert drive(sim, Alternate(10**9), 3600.0, log=log)  # stopped at the first epoch at or after 1 h
    assert sim.now_s >= 3600.0 and all(d.time_s < 3600.0 for d in log) and log
    handed_back = Alternate(4)
    assert drive(sim, handed_back, log=log) and handed_back.calls == 5  # the fifth epoch is handed back
    assert decide_epoch(sim, Alternate(10**9), log)  # the caller decides it
    assert not drive(sim, Alternate(10**9)) and sim.finished
