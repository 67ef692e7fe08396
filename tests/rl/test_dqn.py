"""DQN: a few hundred SB3 steps, model round trip, the numpy Q-network equals SB3's greedy action."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.mig.partition.runner import run_day
from wattsched.rl.dqn import DQNConfig, load_config, load_model, quick_config, train
from wattsched.rl.env import EnvConfig
from wattsched.rl.partitioner import DQNPartitioner
from wattsched.workload.generators import WorkloadSpec, generate_jobs

TINY = quick_config(
    net_arch=(16, 16),
    total_timesteps=300,
    learning_starts=100,
    batch_size=16,
    buffer_size=1_000,
    target_update_interval=100,
    env=EnvConfig(hours=2.0),
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(TINY, tmp_path_factory.mktemp("dqn")).model_path


def test_training_runs_and_saves(trained: Path) -> None:
    assert trained.name == "dqn_model.zip" and trained.is_file()
    assert trained.with_suffix(".json").is_file()
    assert load_config(trained) == TINY


def test_round_trip_gives_the_same_actions(trained: Path, tmp_path: Path) -> None:
    from wattsched.rl.dqn import save_model

    model = load_model(trained)
    copy = save_model(model, TINY, tmp_path / "copy.zip")
    again = load_model(copy)
    observations = np.random.default_rng(0).integers(0, 2, size=(64, 102)).astype(np.float32)
    first, _ = model.predict(observations, deterministic=True)
    second, _ = again.predict(observations, deterministic=True)
    np.testing.assert_array_equal(first, second)
    numpy_policy = DQNPartitioner.from_file(copy)
    np.testing.assert_array_equal([numpy_policy.action(o) for o in observations], first)


def test_trained_policy_runs_a_day_deterministically(trained: Path) -> None:
    spec = WorkloadSpec(profile="alibaba-day", hours=2.0)
    jobs = generate_jobs(spec, 3)
    policy = DQNPartitioner.from_file(trained)
    first = run_day(jobs, policy, horizon_s=spec.horizon_s)
    second = run_day(jobs, policy, horizon_s=spec.horizon_s)
    assert first == second
    assert all(d.configuration in range(1, 13) for d in first.decisions)


def test_config_json_round_trip_and_validation() -> None:
    config = replace(DQNConfig(), env=EnvConfig(et_coefficient=1e-7))
    assert DQNConfig.from_json(config.to_json()) == config
    assert DQNConfig().timesteps == 2000 * 420
    with pytest.raises(ConfigError):
        DQNConfig(net_arch=())


def test_load_rejects_missing_and_bad_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such model"):
        load_model(tmp_path / "absent.zip")
    bad = tmp_path / "bad.zip"
    bad.write_text("not a zip")
    with pytest.raises(InputError, match=r"bad\.zip"):
        load_model(bad)


def test_training_is_deterministic_for_a_seed(trained: Path, tmp_path: Path) -> None:
    again = train(TINY, tmp_path).model_path
    first, second = DQNPartitioner.from_file(trained).network, DQNPartitioner.from_file(again).network
    for a, b in zip(first.weights + first.biases, second.weights + second.biases, strict=True):
        np.testing.assert_array_equal(a, b)
