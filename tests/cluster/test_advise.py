"""The advice rules on hand-built outcomes: Pareto flags, the budget, the recommendation and its ties, the
closest setting, the turn-off time and the clock to lock; the grid of one GPU."""

from __future__ import annotations

import pytest

from wattsched.cluster.advise import (
    BASELINE,
    Budget,
    Outcome,
    Setting,
    _recommend,
    first_stage,
    lock_clock_mhz,
    pareto_flags,
    settings_count,
    suspend_time_s,
)
from wattsched.cluster.spec import PowerStates
from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu


def _outcome(
    setting: Setting,
    energy_j: float,
    late: int,
    avg_s: float,
    max_s: float = 0.0,
    clock: tuple[tuple[int, float], ...] = (),
) -> Outcome:
    return Outcome(setting, energy_j, 100, late, avg_s, max_s, 0, 0, clock)


A = Setting("static", "3", "best-fit", False, True)
B = Setting("static", "1", "first-fit", False, False)
C = Setting("day-night", None, "least-energy", False, True)


def test_pareto_flags_by_hand() -> None:
    outcomes = [
        _outcome(BASELINE, 10.0, 0, 0.0),  # the only one with no late job: on the front
        _outcome(A, 6.0, 10, 5.0),  # lowest energy: on the front
        _outcome(B, 8.0, 10, 6.0),  # A has less energy, the same late share, less tardiness: dominated
        _outcome(C, 8.0, 5, 9.0),  # fewer late jobs than A, less energy than the baseline: on the front
        _outcome(C, 8.0, 5, 9.0),  # an equal point does not dominate its twin
    ]
    assert pareto_flags(outcomes) == [True, True, False, True, True]


def test_budget_and_recommendation() -> None:
    outcomes = [
        _outcome(BASELINE, 10.0, 0, 0.0, 0.0),
        _outcome(A, 6.0, 10, 5.0, 900.0),
        _outcome(B, 8.0, 4, 2.0, 300.0),
    ]
    # At most 5 % late: B (4 %) and the baseline meet it; B uses less energy.
    best, closest = _recommend(outcomes, Budget(0.05))
    assert best is outcomes[2] and closest is best
    # No job more than 10 minutes late as well: B's worst job (300 s) is within it, A's (900 s) is not.
    assert Budget(0.10, 600.0).met_by(outcomes[2]) and not Budget(0.10, 600.0).met_by(outcomes[1])
    # Nobody meets 0 % late within 60 s except the baseline.
    best, _ = _recommend(outcomes[1:], Budget(0.0, 60.0))
    assert best is None
    # Closest: A is 10 % / 1 % + (900 - 60) / 60 = 24 over, B is 4 + 4 = 8 over.
    _, closest = _recommend(outcomes[1:], Budget(0.0, 60.0))
    assert closest is outcomes[2]
    assert Budget(0.0, 60.0).overshoot(outcomes[2]) == pytest.approx(8.0)


def test_equal_outcomes_prefer_the_setting_closest_to_the_baseline() -> None:
    same = [
        _outcome(Setting("no-mig", None, "best-fit", False, False), 5.0, 0, 0.0),
        _outcome(BASELINE, 5.0, 0, 0.0),
    ]
    best, _ = _recommend(same, Budget())
    assert best is not None and best.setting == BASELINE


def test_budget_rejects_bad_values() -> None:
    with pytest.raises(ConfigError):
        Budget(1.5)
    with pytest.raises(ConfigError):
        Budget(0.05, -1.0)


def test_suspend_time_is_the_engines_turn_off_rule() -> None:
    # A100-40GB: idle 40 W, 2 GPUs a server: floor(2 * 5,400 J / (80 W * 60 s)) = floor(2.25) = 2 slots.
    assert suspend_time_s(load_gpu("a100-40gb"), 2, PowerStates()) == 120.0
    # H100: idle 84.4 W: floor(10,800 / (168.8 * 60)) = floor(1.07) = 1 slot; with 100 W of host power:
    # floor(10,800 / (268.8 * 60)) = 0 slots (turn off at once).
    assert suspend_time_s(load_gpu("h100-80gb"), 2, PowerStates()) == 60.0
    assert suspend_time_s(load_gpu("h100-80gb"), 2, PowerStates(host_idle_w=100.0)) == 0.0


def test_lock_clock_is_the_level_with_the_most_time() -> None:
    outcome = _outcome(A, 1.0, 0, 0.0, clock=((1980, 10.0), (1335, 50.0), (1200, 5.0)))
    assert lock_clock_mhz(outcome) == 1335
    assert lock_clock_mhz(_outcome(A, 1.0, 0, 0.0)) is None


def test_first_stage_grid() -> None:
    h100, h200 = load_gpu("h100-80gb"), load_gpu("h200-141gb")
    grid = first_stage(h100)
    # 12 configurations + no-mig + day-night, 4 placements, power states on/off; no clock table.
    assert len(grid) == 14 * 4 * 2 and len(set(grid)) == len(grid) and BASELINE in grid
    assert not any(s.clocks for s in grid)
    assert len(first_stage(h200)) == 14 * 4 * 2 * 2  # clocks on/off as well
    assert settings_count(h100) == 14 * 4 * 2 + 2 and settings_count(h200) == 14 * 4 * 2 * 2 + 4
