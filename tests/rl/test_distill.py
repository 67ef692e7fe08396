"""Distillation of the rollout into the DQN: the samples' labels are the rollout's own choices on a tiny day,
the fine-tuning loss falls and the network then agrees with the labels more often, a DAgger round records the
distilled network's actions, and the whole run is deterministic for a seed."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition import RolloutPartitioner
from wattsched.mig.partition.base import ConfigId
from wattsched.mig.partition.evaluate import DayStream, day_seed
from wattsched.mig.partition.runner import run_day
from wattsched.mig.results import SimSnapshot
from wattsched.rl.distill import DistillationSet, DistillConfig, distill, fine_tune, label_days
from wattsched.rl.dqn import load_config, load_model, member_path, quick_config, train
from wattsched.rl.env import EnvConfig
from wattsched.rl.partitioner import DQNPartitioner
from wattsched.workload.generators import generate_jobs

# Two masked networks at the paper load over one hour: ~20 decision epochs with jobs, seconds to label.
TINY = quick_config(
    n_envs=1,
    ensemble=2,
    ensemble_keep=0,
    net_arch=(16, 16),
    total_timesteps=200,
    learning_starts=100,
    batch_size=16,
    buffer_size=1_000,
    target_update_interval=100,
    select_best_every=0,
    env=EnvConfig(hours=1.0, rate_multiplier=2.5, count_bins=8, mask_idle_slices=True, et_coefficient=2e-7),
)
DAY = 7
# One sampled day and two candidates keep each labelled epoch to four short simulations.
SMALL = DistillConfig(days=1, first_day=DAY, scenarios=1, candidates=2, epochs=30, batch_size=8, seed=4)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(TINY, tmp_path_factory.mktemp("distill-dqn")).model_path


@dataclass
class _Recorder:
    """The rollout, logging each of its choices (what the labels must equal)."""

    rollout: RolloutPartitioner
    choices: list[ConfigId] = field(default_factory=list)
    name: str = "recorder"

    @property
    def scheduler(self) -> str:
        return self.rollout.scheduler

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self.rollout.reset(gpu, seed)

    def initial_configuration(self) -> ConfigId:
        return self.rollout.initial_configuration()

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        choice = self.rollout.decide(snapshot)
        self.choices.append(choice)
        return choice


def _rollout_choices(model: Path) -> tuple[list[ConfigId], tuple[ConfigId, ...]]:
    dqn = DQNPartitioner.from_file(model)
    env = load_config(model).env
    reward = env.reward_spec()
    rollout = RolloutPartitioner(
        dqn, reward.et_coefficient, reward.jobs_norm, scenarios=1, candidates=2, workload=env.workload()
    )
    recorder = _Recorder(rollout)
    spec = env.workload()
    jobs = generate_jobs(spec, day_seed(0, DayStream.TRAINING, DAY))
    run_day(jobs, recorder, horizon_s=spec.horizon_s, seed=DAY)
    return recorder.choices, env.action_ids()


def test_labels_are_the_rollouts_choices_on_a_tiny_day(model: Path) -> None:
    data = label_days(model, [DAY], SMALL)
    choices, actions = _rollout_choices(model)
    assert len(data) == len(choices) > 10
    assert [actions[k] for k in data.labels] == choices
    # the rollout acted, so what was applied is the label; every label is allowed where it was chosen
    np.testing.assert_array_equal(data.actor, data.labels)
    assert data.allowed[np.arange(len(data)), data.labels].all()
    assert data.planned.any() and (data.days == DAY).all()
    # the observation is the DQN's: its one-hot configuration block says where the day stood
    assert (data.observations[:, : len(actions)].sum(axis=1) == 1).all()


def test_labelling_in_two_processes_gives_the_same_samples(model: Path) -> None:
    days = [DAY, DAY + 1]
    one, two = label_days(model, days, SMALL), label_days(model, days, SMALL, workers=2)
    for name in ("observations", "allowed", "labels", "actor", "planned", "days"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))


def _greedy(models: list[Any], data: DistillationSet) -> np.ndarray:
    import torch

    with torch.no_grad():
        obs = torch.as_tensor(data.observations)
        q = torch.stack([m.q_net.q_net(obs) for m in models]).mean(dim=0).numpy()
    return np.where(data.allowed, q, -np.inf).argmax(axis=1)


def test_fine_tuning_lowers_the_loss_and_moves_the_choices_to_the_labels(model: Path) -> None:
    data = label_days(model, [DAY, DAY + 1], SMALL)
    # labels the network does not give yet: every allowed action other than its own greedy one
    models = [load_model(member_path(model, k)) for k in range(2)]
    greedy = _greedy(models, data)
    other = np.array(
        [
            next(k for k in np.flatnonzero(row) if k != g) if row.sum() > 1 else g
            for row, g in zip(data.allowed, greedy, strict=True)
        ]
    )
    target = replace(data, labels=other)
    losses = fine_tune(models, target, replace(SMALL, anchor_weight=0.01, learning_rate=3e-3))
    assert losses[-1] < 0.5 * losses[0]
    choice = data.allowed.sum(axis=1) > 1  # where the label can differ from the greedy action
    assert choice.sum() >= 5
    agree_before = float((greedy == other)[choice].mean())
    agree_after = float((_greedy(models, target) == other)[choice].mean())
    assert agree_before == 0.0 and agree_after > 0.8


def test_fine_tuning_refuses_a_label_the_mask_forbids(model: Path) -> None:
    data = label_days(model, [DAY], SMALL)
    forbidden = np.flatnonzero(~data.allowed[0])
    if not forbidden.size:
        pytest.skip("the first state allows every action")
    labels = data.labels.copy()
    labels[0] = forbidden[0]
    with pytest.raises(ConfigError, match="allowed"):
        fine_tune([load_model(model)], replace(data, labels=labels), SMALL)


def test_distillation_is_deterministic_and_a_dagger_round_records_the_distilled_actions(
    model: Path, tmp_path: Path
) -> None:
    config = replace(SMALL, rounds=2)
    first = distill(model, tmp_path / "a", config)
    second = distill(model, tmp_path / "b", config)
    assert [r["samples"] for r in first.rounds] == [r["samples"] for r in second.rounds]
    for k in range(2):
        a, b = load_model(member_path(first.model_path, k)), load_model(member_path(second.model_path, k))
        for x, y in zip(a.q_net.parameters(), b.q_net.parameters(), strict=True):
            np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    assert first.rounds[0]["actor_agreement"] == 1.0  # round 1: the rollout itself acts
    assert first.rounds[1]["days"] == [DAY + 1, DAY + 2]
    assert load_config(first.model_path).networks == 2
    # round 2 acted with round 1's network (a one-round run is that network): its record is that net's greedy
    # actions on the states it led to, labelled by the rollout over the original DQN
    round_one = distill(model, tmp_path / "one", replace(SMALL, rounds=1)).model_path
    again = label_days(model, [DAY + 1], SMALL, actor_path=round_one)
    assert len(again) == first.rounds[1]["samples"]
    assert again.agreement() == pytest.approx(first.rounds[1]["actor_agreement"])
    distilled = [load_model(member_path(round_one, k)) for k in range(2)]
    np.testing.assert_array_equal(again.actor, _greedy(distilled, again))


def test_distill_config_is_validated() -> None:
    with pytest.raises(ConfigError):
        DistillConfig(days=0)
    with pytest.raises(ConfigError):
        DistillConfig(temperature=0.0)


def test_the_refit_fits_the_original_networks_on_every_rounds_samples(model: Path, tmp_path: Path) -> None:
    config = replace(SMALL, rounds=2, refit_epochs=5, refit_learning_rate=1e-3)
    result = distill(model, tmp_path / "refit", config)
    assert result.rounds[-1]["refit"] and result.rounds[-1]["samples"] == sum(
        r["samples"] for r in result.rounds[:2]
    )
    # by hand: the samples of the two rounds (round 2 acted with round 1's network), then the original fitted
    round_one = distill(model, tmp_path / "one", replace(SMALL, rounds=1)).model_path
    samples = DistillationSet.concatenate(
        [label_days(model, [DAY], SMALL), label_days(model, [DAY + 1], SMALL, actor_path=round_one)]
    )
    originals = [load_model(member_path(model, k)) for k in range(2)]
    losses = fine_tune(originals, samples, config.refit())
    assert losses == result.rounds[-1]["loss_per_epoch"]
    refitted = [load_model(member_path(result.model_path, k)) for k in range(2)]
    for mine, theirs in zip(originals, refitted, strict=True):
        for x, y in zip(mine.q_net.parameters(), theirs.q_net.parameters(), strict=True):
            np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    assert config.refit().seed == SMALL.seed + 2 and config.refit().epochs == 5
    with pytest.raises(ConfigError, match="refit"):
        DistillConfig(refit_epochs=-1)
