"""The gymnasium adapter: checker, registration, seeded repeatability, reward bookkeeping."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from wattsched.rl import ENV_ID, register_envs
from wattsched.rl.env import EnvConfig, MigRepartitionEnv
from wattsched.workload.job import Job, JobKind, Scaling

# A short day keeps these tests fast: 2 h of the profile (about 20 jobs).
SHORT = EnvConfig(hours=2.0)


def test_check_env_passes() -> None:
    check_env(MigRepartitionEnv(SHORT), skip_render_check=True)


def test_registered_id_makes_the_env() -> None:
    register_envs()
    register_envs()  # idempotent
    env = gym.make(ENV_ID, config=SHORT)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (102,) and env.action_space.n == 12
    env.close()
    # the module-qualified form imports the module, which registers the id
    gym.make(f"wattsched.rl.env:{ENV_ID}", config=SHORT).close()


def _episode(seed: int) -> tuple[list[np.ndarray], list[float]]:
    env = MigRepartitionEnv(SHORT)
    obs, _ = env.reset(seed=seed)
    actions = np.random.default_rng(99)
    observations, rewards = [obs], []
    done = False
    while not done:
        obs, reward, done, truncated, _ = env.step(int(actions.integers(12)))
        assert not truncated
        observations.append(obs)
        rewards.append(reward)
    return observations, rewards


def test_same_seed_same_episode_and_other_seed_differs() -> None:
    first, second, other = _episode(4), _episode(4), _episode(5)
    assert len(first[0]) == len(second[0])
    for a, b in zip(first[0], second[0], strict=True):
        np.testing.assert_array_equal(a, b)
    assert first[1] == second[1]
    assert first[1] != other[1]


def test_later_resets_take_new_days_and_seed_restarts_the_stream() -> None:
    env = MigRepartitionEnv(SHORT)
    _, info0 = env.reset(seed=1)
    jobs0 = info0["jobs"]
    counts = [env.reset()[1]["jobs"] for _ in range(4)]
    assert env.reset(seed=1)[1]["jobs"] == jobs0
    assert len({jobs0, *counts}) > 1  # successive days differ


def test_returns_sum_to_minus_the_scaled_day_et_term() -> None:
    # Two jobs by hand; summed rewards = -scale·(a·E + Σtardiness_min / N) / (a + 1) with the simulator's
    # totals.
    durations = (600.0, 300.0, 200.0, 150.0, 600 / 7, 600 / 7 / 1.06)
    jobs = [
        Job("a", 0.0, 100.0, JobKind.TRAINING, Scaling.LINEAR, durations[:5], durations[5]),
        Job("b", 10.0, 2000.0, JobKind.TRAINING, Scaling.LINEAR, durations[:5], durations[5]),
    ]
    config = EnvConfig(hours=1.0, et_coefficient=1e-6, jobs_norm=2.0, reward_scale=3.0)
    env = MigRepartitionEnv(config)
    env.reset(seed=0, options={"jobs": jobs})
    total, done, info = 0.0, False, {}
    while not done:
        _, reward, done, _, info = env.step(3)  # configuration 4: 4g + three 1g
        total += reward
    result = info["result"]
    expected = -3.0 * (1e-6 * result.energy_j + result.avg_tardiness_s * 2 / 60 / 2.0) / (1 + 1e-6)
    assert total == pytest.approx(expected)
    assert result.end_s == pytest.approx(3600.0)  # idle tail to the 1 h horizon is charged too


def test_rejects_bad_action() -> None:
    env = MigRepartitionEnv(SHORT)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"0\.\.11"):
        env.step(12)


@pytest.mark.parametrize("gpu", ["h200-141gb", "a100-80gb"])
def test_spaces_follow_the_gpu_and_the_env_passes_check_env(gpu: str) -> None:
    from gymnasium.utils.env_checker import check_env

    from wattsched.hardware.catalogue import load_gpu

    env = MigRepartitionEnv(EnvConfig(gpu=gpu, hours=1.0, rate_multiplier=2.5))
    configurations = load_gpu(gpu).configuration_ids
    assert env.action_space.n == len(configurations)
    assert env.observation_space.shape == (len(configurations) + 24 + 3 * 2 * 11,)
    check_env(env, skip_render_check=True)


def test_a_random_q_network_is_a_partitioner_the_checker_accepts() -> None:
    import numpy as np

    from wattsched.mig.checks import check_partitioner
    from wattsched.rl.observation import ObservationSpec
    from wattsched.rl.partitioner import DQNPartitioner, QNetwork

    spec = ObservationSpec.for_gpu("h200-141gb")
    rng = np.random.default_rng(0)
    network = QNetwork((rng.normal(size=(16, spec.size)), rng.normal(size=(spec.n_configurations, 16))),
                       (rng.normal(size=16), rng.normal(size=spec.n_configurations)))
    check_partitioner(DQNPartitioner(network), gpus=("h200-141gb", "a100-40gb"), days=1, hours=2.0)
