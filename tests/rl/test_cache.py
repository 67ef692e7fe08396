"""The trained-model cache: one training per config, shared by processes, the same network as a fresh one."""

from __future__ import annotations

import multiprocessing
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wattsched.rl.cache import cache_dir, model_key, trained_model
from wattsched.rl.dqn import quick_config, train
from wattsched.rl.env import EnvConfig
from wattsched.rl.partitioner import DQNPartitioner

TINY = quick_config(
    n_envs=1,
    ensemble=1,
    ensemble_keep=0,
    net_arch=(8, 8),
    total_timesteps=200,
    learning_starts=50,
    batch_size=16,
    buffer_size=500,
    target_update_interval=50,
    select_best_every=0,
    env=EnvConfig(hours=1.0),
)


def _weights(path: Path) -> list[np.ndarray]:
    network = DQNPartitioner.from_file(path).network
    return [*network.weights, *network.biases]


def test_the_cache_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATTSCHED_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("WATTSCHED_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "wattsched"


def test_a_config_trains_once_and_the_cached_network_is_a_fresh_trainings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WATTSCHED_CACHE_DIR", str(tmp_path / "cache"))
    first = trained_model(TINY)
    again = trained_model(TINY)
    assert first.trained and not again.trained
    assert again.model_path == first.model_path and again.wall_s == first.wall_s
    assert again.timesteps == first.timesteps == 200
    fresh = train(TINY, tmp_path / "fresh").model_path
    for cached, new in zip(_weights(again.model_path), _weights(fresh), strict=True):
        np.testing.assert_array_equal(cached, new)
    other = replace(TINY, seed=TINY.seed + 1)
    assert model_key(other) != model_key(TINY)
    assert trained_model(other).trained  # another config is another model
    # no staging folder left behind; one model folder and one lock per config
    names = sorted(p.name for p in (tmp_path / "cache" / "dqn").iterdir())
    assert names == sorted(
        [model_key(TINY), f"{model_key(TINY)}.lock", model_key(other), f"{model_key(other)}.lock"]
    )


def test_a_model_folder_without_its_training_record_is_trained_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WATTSCHED_CACHE_DIR", str(tmp_path))
    broken = tmp_path / "dqn" / model_key(TINY)
    broken.mkdir(parents=True)
    (broken / "dqn_model.zip").write_bytes(b"half written")
    assert trained_model(TINY).trained
    assert len(_weights(broken / "dqn_model.zip")) == 6


def _ask(directory: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    import os

    os.environ["WATTSCHED_CACHE_DIR"] = directory
    queue.put(trained_model(TINY).trained)


def test_two_processes_asking_at_once_train_it_once(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_ask, args=(str(tmp_path), queue)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    assert sorted([queue.get(timeout=5), queue.get(timeout=5)]) == [False, True]
