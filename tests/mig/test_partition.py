"""Repartitioning policies without the simulator: registry, fixed choices, day-night clock, decision logs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.hardware.catalogue import load_gpu
from wattsched.mig.partition import PARTITIONERS, RepartitionPolicy
from wattsched.mig.partition.day_night import DayNightPartitioner
from wattsched.mig.partition.runner import (
    DayRun,
    Decision,
    configuration_time_s,
    held_out_day,
    repartitions_per_hour,
    training_day,
)


def _at(time_s: float, configuration: int | str = 2) -> SimpleNamespace:
    return SimpleNamespace(now_s=time_s, configuration=configuration, jobs=())


A100 = load_gpu("a100-40gb")


def test_registry_lists_the_methods() -> None:
    assert {"no-mig", "static", "day-night", "lookahead"} <= set(PARTITIONERS.available())
    with pytest.raises(UnknownNameError, match="day-night"):
        PARTITIONERS.make("weekly")


@pytest.mark.parametrize("name", ["no-mig", "static", "day-night", "lookahead"])
def test_every_policy_satisfies_the_protocol(name: str) -> None:
    policy = PARTITIONERS.make(name)
    assert isinstance(policy, RepartitionPolicy)
    with pytest.raises(RuntimeError, match="reset"):
        policy.initial_configuration()  # the configuration ids come from the GPU
    policy.reset(A100, 0)
    assert policy.initial_configuration() in {*A100.configuration_ids, "no-mig"}


def test_fixed_policies_never_change() -> None:
    static = PARTITIONERS.make("static", configuration=7)
    no_mig = PARTITIONERS.make("no-mig")
    static.reset(A100)
    no_mig.reset(A100)
    assert static.scheduler == "edf-ss-restricted" and no_mig.scheduler == "edf-fs"
    for t in (0.0, 20_000.0, 50_000.0):
        assert static.decide(_at(t, 7)) == 7
        assert no_mig.decide(_at(t, "no-mig")) == "no-mig"


@pytest.mark.parametrize(
    ("time_s", "expected"),
    [
        (0.0, 2),
        (5 * 3600.0 - 1, 2),
        (5 * 3600.0, 6),
        (12 * 3600.0, 6),
        (17 * 3600.0 - 1, 6),
        (17 * 3600.0, 2),
        (23.9 * 3600, 2),
        (86_400.0 + 6 * 3600, 6),
    ],  # the drain after midnight wraps to the next day's clock
)
def test_day_night_clock(time_s: float, expected: int) -> None:
    policy = DayNightPartitioner()
    policy.reset(A100)  # P1's roles on the A100-40GB: cfg 6 by day, cfg 2 by night
    assert policy.initial_configuration() == 2
    assert policy.decide(_at(time_s)) == expected


def test_day_night_is_configurable_and_validated() -> None:
    policy = PARTITIONERS.make(
        "day-night", day_configuration=3, night_configuration=1, day_start_h=8, day_end_h=20
    )
    policy.reset(A100)
    assert policy.decide(_at(7.5 * 3600)) == 1 and policy.decide(_at(8 * 3600)) == 3
    with pytest.raises(ConfigError):
        DayNightPartitioner(day_start_h=18, day_end_h=6)
    with pytest.raises(ConfigError, match="unknown configuration '13'"):
        PARTITIONERS.make("static", configuration=13).reset(A100)


def _day(decisions: list[Decision], initial: int = 2) -> DayRun:
    return DayRun(result=None, initial_configuration=initial, decisions=tuple(decisions))


def test_repartitions_per_hour_counts_only_changes() -> None:
    run = _day(
        [
            Decision(100.0, 2, False),
            Decision(5 * 3600 + 10, 6, True),
            Decision(5 * 3600 + 20, 6, False),
            Decision(17 * 3600 + 5, 2, True),
            Decision(86_400 + 3600 + 1, 6, True),
        ]
    )
    counts = repartitions_per_hour(run)
    assert counts[5] == 1 and counts[17] == 1 and counts[1] == 1 and counts.sum() == 3


def test_configuration_time_by_four_hour_block() -> None:
    # cfg 2 on [0, 5 h), cfg 6 on [5 h, 17 h), cfg 2 on [17 h, 24 h)
    run = _day([Decision(5 * 3600.0, 6, True), Decision(17 * 3600.0, 2, True)])
    table = configuration_time_s(run, (2, 6))
    hours = table / 3600.0
    np.testing.assert_allclose(hours[:, 0], [4, 1, 0, 0, 3, 4])
    np.testing.assert_allclose(hours[:, 1], [0, 3, 4, 4, 1, 0])
    assert table.sum() == pytest.approx(86_400.0)


def test_day_seeds_are_disjoint_and_repeatable() -> None:
    train = {tuple(training_day(5, i).generate_state(2)) for i in range(50)}
    held = {tuple(held_out_day(5, i).generate_state(2)) for i in range(50)}
    assert len(train) == 50 and len(held) == 50 and not train & held
    assert tuple(held_out_day(5, 3).generate_state(2)) == tuple(held_out_day(5, 3).generate_state(2))
