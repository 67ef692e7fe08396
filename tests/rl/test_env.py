"""The gymnasium adapter: checker, registration, seeded repeatability, reward bookkeeping."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from wattsched.errors import ConfigError
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
    network = QNetwork(
        (rng.normal(size=(16, spec.size)), rng.normal(size=(spec.n_configurations, 16))),
        (rng.normal(size=16), rng.normal(size=spec.n_configurations)),
    )
    check_partitioner(DQNPartitioner(network), gpus=("h200-141gb", "a100-40gb"), days=1, hours=2.0)


def _two_jobs() -> list[Job]:
    durations = (600.0, 300.0, 200.0, 150.0, 600 / 7, 600 / 7 / 1.06)
    return [
        Job("a", 0.0, 100.0, JobKind.TRAINING, Scaling.LINEAR, durations[:5], durations[5]),
        Job("b", 10.0, 2000.0, JobKind.INFERENCE, Scaling.LINEAR, durations[:5], durations[5]),
    ]


def test_switch_penalty_costs_exactly_p_per_repartition() -> None:
    # Same actions with and without the penalty: the returns differ by scale·p·R / 60 / N / (a + 1).
    actions = [0, 11, 2, 2, 5, 0, 3, 3, 3, 3]
    returns, repartitions = [], []
    for penalty in (0.0, 90.0):
        config = EnvConfig(
            hours=1.0, et_coefficient=1e-6, jobs_norm=2.0, reward_scale=3.0, switch_penalty_s=penalty
        )
        env = MigRepartitionEnv(config)
        env.reset(seed=0, options={"jobs": _two_jobs()})
        total, count, done, step = 0.0, 0, False, 0
        while not done:
            _, reward, done, _, info = env.step(actions[min(step, len(actions) - 1)])
            total += reward
            count += info["repartitioned"]
            step += 1
        returns.append(total)
        repartitions.append(count)
    assert repartitions[0] == repartitions[1] >= 2
    expected = 3.0 * 90.0 * repartitions[0] / 60.0 / 2.0 / (1 + 1e-6)
    assert returns[0] - returns[1] == pytest.approx(expected)


def test_queue_blocks_count_the_jobs_present() -> None:
    config = EnvConfig(hours=1.0, count_bins=5, training_bins=3, waiting_bins=3, slice_busy=True)
    env = MigRepartitionEnv(config)
    assert env.observation_space.shape == (102 + 5 + 3 + 3 + 7,)
    obs, _ = env.reset(seed=0, options={"jobs": _two_jobs()})
    # t = 0: job a has arrived (training) and runs on the initial configuration's first slice
    np.testing.assert_array_equal(obs[102:107], [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(obs[107:110], [0, 1, 0])
    np.testing.assert_array_equal(obs[110:113], [1, 0, 0])
    assert obs[113:120].sum() == 1
    obs, *_ = env.step(0)  # configuration 1 (one 7g slice); next epoch: job b arrives at 10 s and waits
    np.testing.assert_array_equal(obs[102:107], [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(obs[107:110], [0, 1, 0])
    np.testing.assert_array_equal(obs[110:113], [0, 1, 0])
    np.testing.assert_array_equal(obs[113:120], [1, 0, 0, 0, 0, 0, 0])


def test_restricted_actions_map_to_their_configurations() -> None:
    env = MigRepartitionEnv(EnvConfig(hours=1.0, actions=(1, 6, 9)))
    assert env.action_space.n == 3
    env.reset(seed=0, options={"jobs": _two_jobs()})
    _, _, _, _, info = env.step(1)
    assert info["repartitioned"]
    assert env._sim.snapshot().configuration == 6
    with pytest.raises(ConfigError):
        MigRepartitionEnv(EnvConfig(actions=(1, 13)))


def test_skip_forced_takes_the_single_allowed_actions_and_keeps_the_day_total() -> None:
    # One rule drives both environments: the lowest allowed action. Skipping the epochs where the mask allows
    # a single action changes neither the day nor the summed reward, only the number of agent steps.
    from wattsched.rl.masking import ActionMask

    base = EnvConfig(
        hours=3.0, rate_multiplier=2.5, count_bins=8, mask_idle_slices=True, switch_penalty_s=20.0
    )
    totals, steps, results = [], [], []
    for skip in (False, True):
        env = MigRepartitionEnv(base, skip_forced=skip)
        mask = ActionMask.idle_slices(env._gpu, env._spec, env._actions)
        obs, _ = env.reset(seed=3)
        total, count, done, epochs, info = 0.0, 0, False, 0, {}
        while not done:
            allowed = np.flatnonzero(mask.of(obs))
            if skip:
                assert len(allowed) > 1  # the agent is only asked when it has a choice
            obs, reward, done, _, info = env.step(int(allowed[0]))
            total += reward
            count += 1
            epochs += info["epochs"]
        totals.append(total)
        steps.append((count, epochs))
        results.append(info["result"])
    assert results[0] == results[1]
    assert totals[1] == pytest.approx(totals[0])
    assert steps[0][0] == steps[0][1] == steps[1][1]  # same epochs in all
    assert steps[1][0] < steps[0][0]  # fewer agent steps
    with pytest.raises(ConfigError, match="skip_forced"):
        EnvConfig(skip_forced=True)


def test_arrival_forecast_follows_the_profile_at_the_load() -> None:
    config = EnvConfig(hours=1.0, rate_multiplier=2.5, arrival_forecast=True)
    # alibaba-day: 0.111 and 0.083 jobs/min in hours 0 and 1, x 2.5 x 60 = 16.65 and 12.45 per hour; peak
    # hour 10 with 0.201 jobs/min -> 30.15 per hour
    counts = config.hourly_arrivals()
    assert counts[0] == pytest.approx(16.65) and counts[1] == pytest.approx(12.45)
    assert max(counts) == pytest.approx(30.15)
    env = MigRepartitionEnv(config)
    assert env.observation_space.shape == (103,)
    obs, _ = env.reset(seed=0, options={"jobs": _two_jobs()})
    assert obs[-1] == pytest.approx(16.65 / 30.15, rel=1e-6)  # t = 0: all of hour 0 ahead
