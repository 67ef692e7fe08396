"""Potential-based shaping: the projected cost by hand, and the telescoping of the shaped return."""

from __future__ import annotations

import pytest

from wattsched.hardware.catalogue import load_gpu
from wattsched.mig.simulator import MigSimulation
from wattsched.rl.env import EnvConfig, MigRepartitionEnv
from wattsched.rl.reward import RewardSpec
from wattsched.rl.shaping import potential, projected_cost
from wattsched.workload.job import Job, JobKind, Scaling

GPU = load_gpu("a100-40gb")
DURATIONS = (600.0, 300.0, 200.0, 150.0, 600 / 7)
FULL = 600 / 7 / 1.06


def _jobs() -> list[Job]:
    return [
        Job("a", 0.0, 100.0, JobKind.TRAINING, Scaling.LINEAR, DURATIONS, FULL),
        Job("b", 10.0, 2000.0, JobKind.TRAINING, Scaling.LINEAR, DURATIONS, FULL),
    ]


def _snapshot_at_first_epoch(configuration: int) -> object:
    sim = MigSimulation(_jobs(), configuration, "edf-ss-restricted", horizon_s=3600.0)
    sim.advance()
    return sim.snapshot()


def test_projected_cost_of_one_job_by_hand() -> None:
    # t = 0, configuration 2 (4g + 3g): job a alone takes the 4g slice (finishes first), 150 s.
    # Energy above idle: (P(4) - P(0)) · 150 s = (243.9 - 40) · 150 = 30,585 J (P(u), CONTRACT §4);
    # lateness 150 - 100 = 50 s.
    energy_j, lateness_s = projected_cost(_snapshot_at_first_epoch(2), GPU, "edf-ss-restricted")
    assert energy_j == pytest.approx(30_585.0)
    assert lateness_s == pytest.approx(50.0)
    # configuration 1 (one 7g slice): 85.71 s, on time; (248.5 - 40) · 600/7 J
    energy_j, lateness_s = projected_cost(_snapshot_at_first_epoch(1), GPU, "edf-ss-restricted")
    assert energy_j == pytest.approx(208.5 * 600 / 7)
    assert lateness_s == 0.0


def test_lateness_already_accrued_is_not_projected_again() -> None:
    # Job a alone on a 1g slice (configuration 12) would complete at 600 s, deadline 100 s. Seen at t = 300 s
    # half done, the projection is the 300 s still to run, all of it late: 300 s, not the 500 s of tardiness.
    from dataclasses import replace

    sim = MigSimulation(_jobs()[:1], 12, "edf-ss-restricted", horizon_s=3600.0)
    sim.advance()
    snapshot = sim.snapshot()
    later = replace(
        snapshot, now_s=300.0, jobs=tuple(replace(v, remaining_fraction=0.5) for v in snapshot.jobs)
    )
    energy_j, lateness_s = projected_cost(later, GPU, "edf-ss-restricted")
    assert lateness_s == pytest.approx(300.0)
    assert energy_j == pytest.approx((119.0 - 40.0) * 300.0)  # P(1) on one busy 1g slice


def test_potential_is_the_reward_of_the_projection() -> None:
    spec = RewardSpec(et_coefficient=1e-6, jobs_norm=2.0, scale=3.0, switch_penalty_s=99.0)
    value = potential(_snapshot_at_first_epoch(2), GPU, "edf-ss-restricted", spec)
    assert value == pytest.approx(-3.0 * (1e-6 * 30_585.0 + 50.0 / 60.0 / 2.0) / (1 + 1e-6))


def test_shaped_return_telescopes_with_gamma_one() -> None:
    # With γ = 1 the shaping terms cancel along the day: shaped return = unshaped return - Φ(s0), Φ(end) = 0.
    actions = [0, 11, 2, 2, 5, 0, 3, 3, 3, 3]
    returns = []
    for shaping in (None, 1.0):
        config = EnvConfig(
            hours=1.0, et_coefficient=1e-6, jobs_norm=2.0, reward_scale=3.0, shaping_gamma=shaping
        )
        env = MigRepartitionEnv(config)
        env.reset(seed=0, options={"jobs": _jobs()})
        total, done, step = 0.0, False, 0
        while not done:
            _, reward, done, _, _ = env.step(actions[min(step, len(actions) - 1)])
            total += reward
            step += 1
        returns.append(total)
    # s0: t = 0 in the initial configuration 2, job a alone (test_projected_cost_of_one_job_by_hand)
    phi0 = -3.0 * (1e-6 * 30_585.0 + 50.0 / 60.0 / 2.0) / (1 + 1e-6)
    assert returns[1] == pytest.approx(returns[0] - phi0)


def test_shaping_gamma_must_match_the_agent() -> None:
    from wattsched.errors import ConfigError
    from wattsched.rl.dqn import DQNConfig

    with pytest.raises(ConfigError, match="shaping_gamma"):
        DQNConfig(gamma=0.9, env=EnvConfig(shaping_gamma=0.99))
    with pytest.raises(ConfigError, match="shaping_gamma"):
        EnvConfig(shaping_gamma=0.0)
