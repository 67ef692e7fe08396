"""The §A.6.3 reward on hand-computed values, and its telescoping to the day's ET term."""

from __future__ import annotations

import pytest

from wattsched.rl.reward import RewardSpec, step_reward


def test_hand_computed_reward() -> None:
    spec = RewardSpec(et_coefficient=1e-6, jobs_norm=200.0)
    # E = 50,000 J, lateness 1,200 s = 20 min -> L = 20 / 200 = 0.1; a·E = 0.05
    # r = -(0.05 + 0.1) / (1 + 1e-6)
    assert step_reward(50_000.0, 1200.0, spec) == pytest.approx(-0.15 / (1 + 1e-6))


def test_scale_multiplies() -> None:
    spec = RewardSpec(et_coefficient=2e-7, jobs_norm=207.0)
    assert step_reward(1e5, 600.0, RewardSpec(2e-7, 207.0, 10.0)) == pytest.approx(
        10 * step_reward(1e5, 600.0, spec)
    )


def test_sum_over_intervals_is_the_day_term() -> None:
    # Splitting a day's energy and lateness into intervals does not change the summed reward (linearity):
    # -(a·x + y)/(a + 1) with x = 6e6 J and y = total lateness / 60 / jobs.
    spec = RewardSpec(et_coefficient=3e-7, jobs_norm=100.0)
    pieces = [(1e6, 0.0), (2e6, 3000.0), (3e6, 9000.0)]
    total = sum(step_reward(e, late, spec) for e, late in pieces)
    y = 12_000.0 / 60.0 / 100.0
    assert total == pytest.approx(-(3e-7 * 6e6 + y) / (1 + 3e-7))


def test_rejects_bad_spec() -> None:
    with pytest.raises(ValueError):
        RewardSpec(et_coefficient=-1.0)


def test_switch_penalty_is_charged_as_lateness_seconds() -> None:
    # a = 1e-6, N = 200, p = 30 s per repartition, 2 repartitions: 600 s of lateness + 60 s charged
    # = 11 min; 11 / 200 = 0.055; a·E = 1e-6 · 50,000 = 0.05; r = -scale · 0.105 / (1 + 1e-6), scale 2
    spec = RewardSpec(et_coefficient=1e-6, jobs_norm=200.0, scale=2.0, switch_penalty_s=30.0)
    assert step_reward(50_000.0, 600.0, spec, repartitions=2) == pytest.approx(-2 * 0.105 / (1 + 1e-6))
    # no repartition: P1's reward; no penalty configured: repartitions change nothing
    assert step_reward(50_000.0, 600.0, spec) == pytest.approx(-2 * (0.05 + 0.05) / (1 + 1e-6))
    plain = RewardSpec(et_coefficient=1e-6, jobs_norm=200.0, scale=2.0)
    assert step_reward(50_000.0, 600.0, plain, repartitions=5) == step_reward(50_000.0, 600.0, plain)


def test_rejects_negative_switch_penalty() -> None:
    with pytest.raises(ValueError):
        RewardSpec(et_coefficient=1e-7, switch_penalty_s=-1.0)
