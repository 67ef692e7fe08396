"""Unfinished work is never a result: ``unfinished_jobs``, its warning, ET's refusal, starving policies."""

from __future__ import annotations

import math
import warnings

import pytest

from wattsched.errors import ConfigError
from wattsched.metrics import et_of_results, et_score
from wattsched.mig.checks import CheckError, check_policy
from wattsched.mig.policies import StarvedJobsError
from wattsched.mig.policies.base import DeadlineOrder
from wattsched.mig.results import UnfinishedJobsWarning
from wattsched.mig.simulator import MigSimulation, simulate
from wattsched.mig.view import Assignment, SchedulerView
from wattsched.workload.job import Job, JobKind, Scaling

SIZES = (1, 2, 3, 4, 7)  # the A100-40GB's compute sizes


def _job(name: str, arrival_s: float, run_s: float) -> Job:
    """A job that runs ``run_s`` on every slice size (capped scaling), deadline ``arrival + run_s``."""
    return Job(
        name, arrival_s, arrival_s + run_s, JobKind.TRAINING, Scaling.CAPPED, (run_s,) * 5, run_s, SIZES
    )


class NeverAssigns(DeadlineOrder):
    """Keeps every job waiting: ``assign`` returns ``None`` (keep the current, empty, assignment)."""

    name = "never"

    def assign(self, view: SchedulerView) -> Assignment | None:
        return None


def test_a_policy_that_never_assigns_is_refused_with_the_checkers_message() -> None:
    jobs = [_job("a", 0.0, 100.0), _job("b", 10.0, 50.0)]
    with pytest.raises(StarvedJobsError) as raised:
        simulate(jobs, "no-mig", NeverAssigns())
    message = str(raised.value)
    # Both jobs wait at the last arrival (10 s), on the one slice of the MIG-disabled GPU.
    assert message == (
        "policy 'never' left 2 job(s) waiting forever: when the run ended at 10 s, 1 slice(s) were "
        "free and nothing else was pending (a slice may idle only while no job waits: assign must "
        "place waiting jobs on free slices)"
    )
    with pytest.raises(CheckError) as checked:
        check_policy(NeverAssigns(), traces=1)
    checked_message = str(checked.value)
    rule = message[message.index(" slice(s) were free") :]  # the counts differ with the checker's trace
    assert checked_message.startswith("never on a100-40gb cfg 1, trace 0: policy 'never' left ")
    assert checked_message.endswith(rule)


def test_stopping_before_the_work_is_done_leaves_unfinished_jobs() -> None:
    # One slice (no-mig): a runs [0, 100), b waits and runs [100, 150). Stopped at 120 s, b is unfinished.
    jobs = [_job("a", 0.0, 100.0), _job("b", 10.0, 50.0)]
    with pytest.warns(UnfinishedJobsWarning, match=r"^1 of 2 jobs did not finish in the simulation"):
        stopped = simulate(jobs, "no-mig", "edf-ss", stop_s=120.0)
    assert stopped.unfinished_jobs == 1 and stopped.jobs == 2 and stopped.end_s == 120.0
    assert stopped.to_dict()["unfinished_jobs"] == 1
    assert math.isclose(sum(stopped.busy_time_s), 120.0)
    with pytest.raises(ConfigError, match=r"^ET of runs with unfinished jobs: 1 run\(s\) .* left 1 job\(s\)"):
        et_of_results([stopped], a=1e-6)
    with pytest.raises(ConfigError, match="allow_unfinished=True"):
        et_score([stopped.energy_j], [stopped.avg_tardiness_s], 1e-6, unfinished_jobs=[1])
    assert et_of_results([stopped], a=1e-6, allow_unfinished=True) == et_score(
        [stopped.energy_j], [stopped.avg_tardiness_s], 1e-6
    )

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a run to its end warns about nothing
        full = simulate(jobs, "no-mig", "edf-ss")
    assert full.unfinished_jobs == 0 and full.end_s == 150.0 and full.late_jobs == 1  # b: 150 > 60
    assert et_of_results([full], a=1e-6) == et_score([full.energy_j], [full.avg_tardiness_s], 1e-6)


def test_a_stop_after_the_end_changes_nothing() -> None:
    jobs = [_job(f"j{i}", 7.0 * i, 30.0 + 11.0 * (i % 4)) for i in range(20)]
    for config in (1, 3, "no-mig"):
        normal = simulate(jobs, config, "edf-ss", horizon_s=200.0, record_jobs=True)
        late_stop = simulate(jobs, config, "edf-ss", horizon_s=200.0, record_jobs=True, stop_s=1e9)
        assert late_stop == normal and normal.unfinished_jobs == 0
        at_horizon = simulate(jobs, config, "edf-ss", horizon_s=5000.0, stop_s=1000.0)
        assert at_horizon.unfinished_jobs == 0 and at_horizon.end_s == 1000.0  # energy up to the stop


def test_stepped_runs_count_jobs_left_waiting() -> None:
    sim = MigSimulation([_job("a", 0.0, 100.0)], "no-mig", NeverAssigns())
    while sim.advance():
        pass
    assert sim.result().unfinished_jobs == 1 and sim.waiting_without_events() == (1, 1)


def test_bad_stop_is_refused() -> None:
    with pytest.raises(ConfigError, match="stop_s must be a finite number >= 0"):
        simulate([_job("a", 0.0, 1.0)], "no-mig", "edf-ss", stop_s=-1.0)


def test_cluster_results_carry_unfinished_jobs() -> None:
    from wattsched.cluster.engine import simulate_cluster
    from wattsched.cluster.spec import ClusterSpec

    spec = ClusterSpec.homogeneous(1, 1)
    result = simulate_cluster([_job("a", 0.0, 100.0), _job("b", 5.0, 10.0)], spec)
    assert result.unfinished_jobs == 0 and result.to_dict()["unfinished_jobs"] == 0


def test_method_et_refuses_days_with_unfinished_jobs() -> None:
    from wattsched.mig.partition.evaluate import et_by_method

    rows = [
        {"method": "static", "energy_j": 100.0, "avg_tardiness_s": 60.0},
        {"method": "day-night", "energy_j": 300.0, "avg_tardiness_s": 180.0},
    ]
    # a = mean tardiness (2 min) / (2 * mean energy (200 J)) = 0.005 per J.
    means, a = et_by_method(rows, pool=["static", "day-night"])
    assert a == pytest.approx(0.005) and means["static"] == pytest.approx((0.005 * 100 + 1) / 1.005)
    with pytest.raises(ConfigError, match="unfinished"):
        et_by_method([rows[0], {**rows[1], "unfinished_jobs": 3}], pool=["static", "day-night"])
