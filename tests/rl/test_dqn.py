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
    n_envs=1,
    ensemble=1,
    ensemble_keep=0,
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


def test_training_leaves_no_log_folder_in_the_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SB3's default logger makes an ``SB3-<date>`` folder in the temp dir at every learn(); ours does not."""
    import tempfile

    from wattsched.rl.dqn import build_model

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    model = build_model(replace(TINY, total_timesteps=120, learning_starts=50))
    model.learn(total_timesteps=120)
    assert model.num_timesteps == 120
    assert list(scratch.iterdir()) == []


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


def test_training_neither_seeds_nor_draws_from_numpys_global_generator(tmp_path: Path) -> None:
    """Exploration and replay sampling use the agent's own seeded streams: a training in between leaves
    ``np.random`` where it was, and two trainings of one seed give the same network whatever that state."""
    from wattsched.rl.dqn import build_model

    config = replace(TINY, total_timesteps=250, learning_starts=50, exploration_fraction=0.5)
    np.random.seed(1234)
    expected = np.random.rand(3)
    runs = []
    for global_seed in (1234, 99):
        np.random.seed(global_seed)
        model = build_model(config)
        model.learn(total_timesteps=config.timesteps)
        if global_seed == 1234:
            np.testing.assert_array_equal(np.random.rand(3), expected)
        runs.append([p.detach().numpy().copy() for p in model.policy.q_net.parameters()])
    # The ε branch ran (exploration_rate starts at 1), so the networks depend on the exploration stream.
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)


# The paper preset's additions at a tiny budget: queue blocks, the mask, double DQN, n-step returns, two envs.
TINY_EXTENDED = replace(
    TINY,
    n_envs=2,
    n_steps=3,
    double_q=True,
    env=EnvConfig(
        hours=2.0,
        rate_multiplier=2.5,
        count_bins=8,
        training_bins=4,
        waiting_bins=4,
        slice_busy=True,
        mask_idle_slices=True,
        switch_penalty_s=30.0,
        actions=(1, 2, 3, 6, 9, 10, 11, 12),
    ),
)


@pytest.fixture(scope="module")
def trained_extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(TINY_EXTENDED, tmp_path_factory.mktemp("dqn-extended")).model_path


def test_extended_config_round_trips_through_the_saved_json(trained_extended: Path) -> None:
    import json

    loaded = load_config(trained_extended)
    assert loaded == TINY_EXTENDED
    assert loaded.env.actions == (1, 2, 3, 6, 9, 10, 11, 12)  # a tuple again, not the JSON list
    saved = json.loads(trained_extended.with_suffix(".json").read_text(encoding="utf-8"))
    assert saved["env"]["mask_idle_slices"] is True and saved["n_envs"] == 2


def test_extended_training_is_deterministic_for_a_seed(trained_extended: Path, tmp_path: Path) -> None:
    again = train(TINY_EXTENDED, tmp_path).model_path
    first = DQNPartitioner.from_file(trained_extended).network
    second = DQNPartitioner.from_file(again).network
    for a, b in zip(first.weights + first.biases, second.weights + second.biases, strict=True):
        np.testing.assert_array_equal(a, b)


def test_masked_model_and_numpy_partitioner_agree_and_respect_the_mask(trained_extended: Path) -> None:
    from wattsched.hardware.catalogue import load_gpu
    from wattsched.rl.env import MigRepartitionEnv
    from wattsched.rl.masking import ActionMask

    env_config = TINY_EXTENDED.env
    env = MigRepartitionEnv(env_config)
    observations = [env.reset(seed=5)[0]]
    rng = np.random.default_rng(1)
    done = False
    while not done:
        obs, _, done, _, _ = env.step(int(rng.integers(env.action_space.n)))
        observations.append(obs)
    batch = np.stack(observations)
    model = load_model(trained_extended)
    actions, _ = model.predict(batch, deterministic=True)
    policy = DQNPartitioner.from_file(trained_extended)
    policy.reset(load_gpu("a100-40gb"))
    np.testing.assert_array_equal([policy.action(o) for o in batch], actions)
    gpu = load_gpu("a100-40gb")
    mask = ActionMask.idle_slices(gpu, env_config.observation_spec(gpu), env_config.action_ids(gpu))
    assert mask.of(batch)[np.arange(len(batch)), actions].all()


def test_exploration_only_stores_allowed_actions(tmp_path: Path) -> None:
    # Warm-up and ε-greedy draws both go through the mask: every action in the replay buffer is allowed
    # in the state it was taken in.
    from wattsched.hardware.catalogue import load_gpu
    from wattsched.rl.dqn import build_model
    from wattsched.rl.masking import ActionMask

    config = replace(TINY_EXTENDED, n_envs=1, n_steps=1, total_timesteps=400, learning_starts=200)
    model = build_model(config)
    model.learn(total_timesteps=config.timesteps)
    buffer = model.replay_buffer
    stored = buffer.observations[: buffer.pos, 0]
    taken = buffer.actions[: buffer.pos, 0, 0].astype(int)
    gpu = load_gpu("a100-40gb")
    env_config = config.env
    mask = ActionMask.idle_slices(gpu, env_config.observation_spec(gpu), env_config.action_ids(gpu))
    allowed = mask.of(stored)
    assert len(taken) == 400 and not allowed.all()  # some actions were masked in some states
    assert allowed[np.arange(len(taken)), taken].all()


def test_rejects_bad_vectorisation_and_mask_without_counts() -> None:
    with pytest.raises(ConfigError):
        DQNConfig(n_envs=0)
    with pytest.raises(ConfigError, match="ensemble"):
        DQNConfig(ensemble=0)
    with pytest.raises(ConfigError, match="ensemble_keep"):
        DQNConfig(ensemble=2, ensemble_keep=3)
    with pytest.raises(ConfigError, match="ensemble_days"):
        DQNConfig(ensemble=2, ensemble_keep=1, ensemble_days=0)
    # with_ensemble: the kept number carries over while it fits, else every network acts
    quick = quick_config()
    assert (quick.ensemble, quick.ensemble_keep) == (8, 3)
    assert (quick.with_ensemble(4).ensemble, quick.with_ensemble(4).ensemble_keep) == (4, 3)
    assert quick.with_ensemble(2).ensemble_keep == 0 and quick.with_ensemble(5, 1).ensemble_keep == 1
    with pytest.raises(ConfigError, match="ensemble_keep"):
        quick.with_ensemble(2, 3)
    with pytest.raises(ConfigError, match="count_bins"):
        EnvConfig(mask_idle_slices=True)


def test_quick_changes_are_exactly_what_p1_config_switches_off() -> None:
    from dataclasses import fields

    from wattsched.rl.dqn import QUICK_CHANGES, p1_config, paper_config

    quick, p1 = quick_config(), p1_config()
    changed = {f.name for f in fields(DQNConfig) if getattr(quick, f.name) != getattr(p1, f.name)} - {"env"}
    changed |= {f.name for f in fields(EnvConfig) if getattr(quick.env, f.name) != getattr(p1.env, f.name)}
    assert changed == set(QUICK_CHANGES)
    assert p1.env.count_bins == 0 and p1.env.shaping_gamma is None and p1.learning_rate == 1e-3
    paper = paper_config(seed=4)
    assert paper.env.rate_multiplier == 2.5 and paper.seed == 4
    assert replace(paper, seed=0, env=replace(paper.env, rate_multiplier=1.0)) == quick
    assert quick.env.shaping_gamma == quick.gamma  # shaping keeps the optimal policy only with the agent's γ


# ---------------------------------------------------------------------------------------------- ensembles
TINY_ENSEMBLE = replace(TINY, ensemble=2, total_timesteps=200, seed=3)


@pytest.fixture(scope="module")
def trained_ensemble(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(TINY_ENSEMBLE, tmp_path_factory.mktemp("dqn-ensemble")).model_path


def _same_network(first: object, second: object) -> None:
    for a, b in zip(first.weights + first.biases, second.weights + second.biases, strict=True):  # type: ignore[attr-defined]
        np.testing.assert_array_equal(a, b)


def test_ensemble_members_are_the_single_networks_of_their_seeds(
    trained_ensemble: Path, tmp_path: Path
) -> None:
    from wattsched.rl.dqn import member_path
    from wattsched.rl.partitioner import QEnsemble, QNetwork

    assert member_path(trained_ensemble, 1).name == "dqn_model-member1.zip"
    assert load_config(trained_ensemble) == TINY_ENSEMBLE
    policy = DQNPartitioner.from_file(trained_ensemble)
    assert isinstance(policy.network, QEnsemble) and len(policy.network.members) == 2
    # member k is exactly the single network trained with seed + k
    assert TINY_ENSEMBLE.member(1) == replace(TINY_ENSEMBLE, seed=4, ensemble=1)
    single = train(TINY_ENSEMBLE.member(1), tmp_path / "single").model_path
    _same_network(policy.network.members[1], QNetwork.from_sb3(load_model(single)))
    _same_network(policy.network.members[0], QNetwork.from_sb3(load_model(trained_ensemble)))


def test_ensemble_acts_on_the_mean_q_values(trained_ensemble: Path) -> None:
    from wattsched.hardware.catalogue import load_gpu

    policy = DQNPartitioner.from_file(trained_ensemble)
    policy.reset(load_gpu("a100-40gb"))
    members = policy.network.members  # type: ignore[union-attr]
    observations = np.random.default_rng(2).integers(0, 2, size=(32, members[0].inputs)).astype(np.float64)
    mask = policy._mask
    for obs in observations:
        mean = (members[0].q_values(obs) + members[1].q_values(obs)) / 2.0
        np.testing.assert_allclose(policy.network.q_values(obs), mean, rtol=0, atol=1e-12)
        allowed = mask.of(obs) if mask is not None else np.ones_like(mean, dtype=bool)
        assert policy.action(obs) == int(np.argmax(np.where(allowed, mean, -np.inf)))


def test_ensemble_needs_every_member_file(trained_ensemble: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "dqn_model.zip"
    shutil.copy(trained_ensemble, copy)
    shutil.copy(trained_ensemble.with_suffix(".json"), copy.with_suffix(".json"))
    with pytest.raises(InputError, match="member1"):
        DQNPartitioner.from_file(copy)


def test_parallel_workers_train_the_same_ensemble(trained_ensemble: Path, tmp_path: Path) -> None:
    from wattsched.rl.dqn import member_path

    steps: list[int] = []
    again = train(TINY_ENSEMBLE, tmp_path, workers=2, progress=steps.append)
    assert again.members == 2 and again.timesteps == 400
    assert steps == [200, 400]  # once per finished network
    for k in range(2):
        first = _network_of(member_path(trained_ensemble, k))
        second = _network_of(member_path(again.model_path, k))
        _same_network(first, second)
    with pytest.raises(ConfigError, match="workers"):
        train(TINY_ENSEMBLE, tmp_path, workers=0)


def _network_of(path: Path) -> object:
    from wattsched.rl.partitioner import QNetwork

    return QNetwork.from_sb3(load_model(path))


def test_ensemble_shapes_must_agree() -> None:
    from wattsched.rl.partitioner import QEnsemble, QNetwork

    small = QNetwork((np.ones((2, 3)),), (np.zeros(2),))
    wide = QNetwork((np.ones((2, 4)),), (np.zeros(2),))
    with pytest.raises(ValueError, match="differ"):
        QEnsemble((small, wide))
    with pytest.raises(ValueError, match="at least one"):
        QEnsemble(())
    both = QEnsemble((small, QNetwork((2 * np.ones((2, 3)),), (np.ones(2),))))
    # by hand: member 1 gives 3 per output, member 2 gives 2·3 + 1 = 7; mean 5
    np.testing.assert_array_equal(both.q_values(np.ones(3)), [5.0, 5.0])


TINY_CHOICE = replace(TINY, ensemble=3, ensemble_keep=2, ensemble_days=2, total_timesteps=150, seed=5)


def test_ensemble_keeps_the_networks_with_the_lowest_validation_cost(tmp_path: Path) -> None:
    import json

    from wattsched.rl.dqn import ENSEMBLE_DAY_OFFSET, member_path, validation_cost
    from wattsched.rl.partitioner import QEnsemble

    result = train(TINY_CHOICE, tmp_path / "model")
    selection = result.selection
    assert selection is not None and result.members == 2 and result.timesteps == 3 * 150
    assert json.loads(result.model_path.with_suffix(".selection.json").read_text()) == selection
    ranked = selection["ranked"]
    costs = [r["validation_cost"] for r in ranked]
    assert sorted(r["seed"] for r in ranked) == [5, 6, 7] and costs == sorted(costs)
    assert selection["kept_seeds"] == [r["seed"] for r in ranked[:2]]
    # the files are numbered best first, each the single network of its seed, and its cost recomputes
    for index, row in enumerate(ranked):
        member_file = member_path(result.model_path, index)
        single = train(replace(TINY_CHOICE.member(0), seed=row["seed"]), tmp_path / f"s{row['seed']}")
        _same_network(_network_of(member_file), _network_of(single.model_path))
        policy = DQNPartitioner.from_file(single.model_path)
        again = validation_cost(TINY_CHOICE, policy, ENSEMBLE_DAY_OFFSET, 2)
        assert again == pytest.approx(row["validation_cost"], rel=1e-12)
    policy = DQNPartitioner.from_file(result.model_path)
    assert isinstance(policy.network, QEnsemble) and len(policy.network.members) == 2
    _same_network(policy.network.members[1], _network_of(member_path(result.model_path, 1)))


def test_validation_cost_runs_on_the_training_gpu_by_hand() -> None:
    from wattsched.mig.partition.evaluate import evaluate_policy
    from wattsched.mig.partition.fixed import StaticPartitioner
    from wattsched.rl.dqn import validation_cost

    def config_on(gpu: str) -> DQNConfig:
        return replace(TINY, env=EnvConfig(hours=2.0, gpu=gpu, et_coefficient=4e-8, rate_multiplier=2.5))

    h200 = config_on("h200-141gb")
    workload = h200.env.workload()
    rows = evaluate_policy(
        "s", StaticPartitioner(3), range(7, 9), h200.seed, workload, held_out=False, gpu="h200-141gb"
    )
    by_hand = sum(4e-8 * r["energy_j"] + r["avg_tardiness_s"] / 60.0 for r in rows) / 2
    assert validation_cost(h200, StaticPartitioner(3), 7, 2) == pytest.approx(by_hand, rel=1e-12)
    assert validation_cost(config_on("a100-40gb"), StaticPartitioner(3), 7, 2) != pytest.approx(by_hand)


def test_validation_cost_runs_with_the_training_power_options() -> None:
    # An env trained with one power curve and the 700 W cap is validated on that simulator, not the default.
    from wattsched.mig.partition.evaluate import evaluate_policy
    from wattsched.mig.partition.fixed import StaticPartitioner
    from wattsched.rl.dqn import validation_cost

    env = EnvConfig(hours=2.0, gpu="h200-141gb", et_coefficient=4e-8, rate_multiplier=2.5)
    config = replace(TINY, env=replace(env, power_curve="compute-fma", power_cap=True))
    rows = evaluate_policy(
        "s",
        StaticPartitioner(3),
        range(7, 9),
        config.seed,
        env.workload(),
        held_out=False,
        gpu="h200-141gb",
        power_curve="compute-fma",
        power_cap=True,
    )
    default = evaluate_policy(
        "s", StaticPartitioner(3), range(7, 9), config.seed, env.workload(), held_out=False, gpu="h200-141gb"
    )
    assert [r["energy_j"] for r in rows] != pytest.approx([r["energy_j"] for r in default])
    by_hand = sum(4e-8 * r["energy_j"] + r["avg_tardiness_s"] / 60.0 for r in rows) / 2
    assert validation_cost(config, StaticPartitioner(3), 7, 2) == pytest.approx(by_hand, rel=1e-12)


def test_training_reports_its_steps_as_it_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import wattsched.rl.dqn as dqn

    monkeypatch.setattr(dqn, "_PROGRESS_EVERY", 50)
    steps: list[int] = []
    config = replace(TINY, ensemble=2, total_timesteps=150, select_best_every=0)
    result = train(config, tmp_path, progress=steps.append)
    assert steps == sorted(steps) and steps[-1] == result.timesteps == 300
    assert {50, 100, 150, 200, 250} <= set(steps)  # within each network, and the second counts on from 150
