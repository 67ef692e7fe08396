"""The experiment protocol: typed methods, one method → policy mapping, day seeds, day results, ET."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wattsched.errors import ConfigError
from wattsched.experiments.protocol import (
    METHOD_LABELS,
    DayStream,
    Method,
    Setting,
    build_policy,
    compare,
    day_seed,
    et_frame,
    method_from_label,
    results_frame,
    run_method,
    stacked,
)
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig.partition import DayNightPartitioner, LookaheadPartitioner, NoMigPartitioner
from wattsched.mig.partition.fixed import StaticPartitioner
from wattsched.mig.partition.runner import held_out_day, training_day
from wattsched.workload.generators import WorkloadSpec


def test_method_specs() -> None:
    assert Method("static").label == "static" and Method("static", best=True).label == "static-best"
    assert Method("static", configuration=5, name="five").label == "five"
    assert list(METHOD_LABELS) == [
        "no-mig",
        "static",
        "static-best",
        "day-night",
        "lookahead",
        "dynamic",
        "dynamic-rollout",
    ]
    assert method_from_label("dynamic-rollout") == Method("dynamic", rollout=2)
    assert method_from_label("static-best") == Method("static", best=True)
    with pytest.raises(ConfigError, match="unknown method 'weekly'"):
        Method("weekly")
    with pytest.raises(ConfigError, match="only 'static'"):
        Method("day-night", configuration=3)
    with pytest.raises(ConfigError, match="not both"):
        Method("static", configuration=3, best=True)
    with pytest.raises(ConfigError, match="valid: no-mig"):
        method_from_label("static-cfg3")
    with pytest.raises(ConfigError, match="only for 'dynamic'"):
        Method("lookahead", rollout=2)
    with pytest.raises(ConfigError, match="rollout=-1"):
        Method("dynamic", rollout=-1)


def test_day_streams_are_one_scheme() -> None:
    # held-out and training days are the runner's; pilot, selection, validation: disjoint training ranges
    assert day_seed(7, DayStream.HELD_OUT, 3).spawn_key == held_out_day(7, 3).spawn_key
    assert day_seed(7, DayStream.TRAINING, 3).spawn_key == training_day(7, 3).spawn_key
    assert day_seed(7, DayStream.PILOT, 3).spawn_key == training_day(7, 1_000_003).spawn_key
    assert day_seed(7, DayStream.SELECTION, 3).spawn_key == training_day(7, 1_001_003).spawn_key
    assert day_seed(7, DayStream.VALIDATION, 0).spawn_key == training_day(7, 2_000_000).spawn_key
    keys = {day_seed(7, stream, i).spawn_key for stream in DayStream for i in range(100)}
    assert len(keys) == 5 * 100  # no two streams share a day
    with pytest.raises(ValueError, match="index"):
        day_seed(7, DayStream.HELD_OUT, -1)


def test_build_policy_is_the_one_mapping() -> None:
    setting = Setting(
        3, WorkloadSpec(profile="alibaba-day", hours=1.0), selection_days=1, pilot_days=1, et_coefficient=2e-8
    )
    gpu = load_gpu(None)
    static = build_policy(Method("static"), setting)
    assert isinstance(static, StaticPartitioner)
    static.reset(gpu)
    assert static.initial_configuration() == gpu.role("static")
    fixed = build_policy(Method("static", configuration=5), setting)
    fixed.reset(gpu)
    assert fixed.initial_configuration() == 5
    best = build_policy(Method("static", best=True), setting)
    best.reset(gpu)
    assert best.initial_configuration() == setting.best_static()[0]
    assert isinstance(build_policy(Method("no-mig"), setting), NoMigPartitioner)
    assert isinstance(build_policy(Method("day-night"), setting), DayNightPartitioner)
    lookahead = build_policy(Method("lookahead"), setting)
    assert isinstance(lookahead, LookaheadPartitioner)
    # the given a, and the expected jobs of the workload (1 h of the Fig. 5 profile: 60 · 0.111)
    assert lookahead.et_coefficient == 2e-8 and lookahead.jobs_norm == pytest.approx(6.66)
    with pytest.raises(ConfigError, match="trained model"):
        build_policy(Method("dynamic"), setting)


def test_day_results_and_frames() -> None:
    setting = Setting(5, WorkloadSpec(profile="alibaba-day", hours=6.0, rate_multiplier=2.5))
    results = run_method(Method("day-night"), range(2), setting)
    again = run_method(Method("day-night"), range(2), setting)
    assert [r.row() for r in results] == [r.row() for r in again]  # deterministic
    first = results[0]
    assert first.method == "day-night" and first.day == 0 and first.repartitions == 1  # 05:00 only in 6 h
    assert first.repartitions_per_hour.tolist() == [0] * 5 + [1] + [0] * 18
    assert first.configuration_time_s.shape == (6, 12)
    # the night role until the 05:00 switch, the day role after it (the blackout counts for the new one)
    ids = list(load_gpu(None).configuration_ids)
    night, day = ids.index(load_gpu(None).role("night")), ids.index(load_gpu(None).role("day"))
    assert first.configuration_time_s[0, night] == pytest.approx(4 * 3600.0)
    assert first.configuration_time_s[1, day] + first.configuration_time_s[1, night] == pytest.approx(
        4 * 3600.0
    )
    assert 0 < first.idle_share < 1
    frame = results_frame(results)
    assert list(frame["day"]) == [0, 1]
    assert stacked(frame, "repartitions_per_hour").shape == (2, 24)
    assert stacked(frame, "configuration_time_s").shape == (2, 6, 12)


def test_et_frame_and_compare_by_hand() -> None:
    days = pd.DataFrame(
        {
            "method": ["a", "b", "a", "b"],
            "day": [0, 0, 1, 1],
            "energy_j": [1.0, 1.0, 1.0, 1.0],
            "avg_tardiness_s": [60.0, 120.0, 180.0, 240.0],
        }
    )
    # pool a only: t̄ = 2 min, s̄ = 1 J, a = 1; ET = (x + y)/2 = 1, 3 (method a) and 1.5, 2.5 (b)
    frame, a = et_frame(days, ["a"])
    assert a == pytest.approx(1.0)
    assert frame["et"].tolist() == pytest.approx([1.0, 1.5, 2.0, 2.5])
    fixed, given = et_frame(days, ["a"], a=0.0)
    assert given == 0.0 and fixed["et"].tolist() == pytest.approx([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ConfigError, match="no runs"):
        et_frame(days, ["z"])
    ours = pd.Series([1.0, 2.0], index=[0, 1])
    other = pd.Series([2.0, 2.0], index=[0, 1])
    result = compare(ours, other)
    # ratio of means 1.5 / 2 = 0.75 -> 25 %; per day 50 % and 0 % -> 25 %
    assert result["ratio_of_means"] == pytest.approx(0.25) and result["mean_of_ratios"] == pytest.approx(0.25)
    # delta method: residuals x - r·y = -0.5, 0.5; sd 0.7071; half = 1.96 · 0.7071 / (√2 · 2) = 0.49
    assert result["ci95_high"] - result["ratio_of_means"] == pytest.approx(0.49, abs=1e-3)
    assert result["days_better"] == 1 and result["days"] == 2
    assert np.isnan(compare(ours, pd.Series([0.0, 0.0], index=[0, 1]))["ratio_of_means"])
