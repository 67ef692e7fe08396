"""Distilling the rollout into the DQN: approximate policy iteration, opt-in (no shipped recipe uses it).

The rollout (:class:`~wattsched.mig.partition.rollout.RolloutPartitioner`) improves a trained DQN at decision
time by simulating its best-ranked configurations ahead. Distillation moves that improvement into the network:

1. **Label.** Run days of the *training* stream (``DistillConfig.first_day`` on; never a held-out day) with an
   actor choosing the configurations and, at every decision epoch, the rollout over the original DQN (the
   *expert*) planning in the same state (:meth:`RolloutPartitioner.plan`). Each epoch gives one sample: the
   DQN's observation, the actions its mask allows there and the expert's choice as an action index
   (:class:`DistillationSet`). In the first round the expert is also the actor (the states the rollout
   visits); in later rounds the network distilled so far acts and the expert only labels (DAgger: Ross, Gordon
   & Bagnell, AISTATS 2011), so the network learns the states its own choices lead to.
2. **Fine-tune.** The ensemble's acting networks are trained together on the samples so far
   (:func:`fine_tune`): cross-entropy of the expert's action under the softmax of the ensemble's mean
   Q-values over the allowed actions, divided by ``temperature``, plus ``anchor_weight`` times the mean
   squared change of each network's allowed Q-values from its values before fine-tuning (in units of
   ``temperature``), which keeps the Q-values a value scale (the rollout ranks candidates by them) and the
   choices the expert does not contradict.
3. **Refit** (``refit_epochs`` > 0, what ``benchmarks/dqn_distill.py`` measured best): the original networks
   fitted once more on every round's samples with their own settings; the result is that fit.

The result is a model directory like :func:`~wattsched.rl.dqn.train`'s (``dqn_model.zip``, its members and
config; the config's ensemble is the acting networks) plus ``distill.json`` (this config and what each round
did), loaded with :meth:`DQNPartitioner.from_file <wattsched.rl.partitioner.DQNPartitioner.from_file>`.
Everything is seeded: the same config and model give the same weights.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import ConfigId
from wattsched.mig.partition.evaluate import DayStream, day_seed
from wattsched.mig.partition.rollout import RolloutPartitioner
from wattsched.mig.partition.runner import run_day
from wattsched.mig.results import SimSnapshot
from wattsched.rl.dqn import MODEL_FILE, DQNConfig, load_config, load_model, member_path, save_model
from wattsched.rl.partitioner import DQNPartitioner
from wattsched.workload.generators import generate_jobs

__all__ = [
    "DISTILL_DAY_OFFSET",
    "DistillConfig",
    "DistillResult",
    "DistillationSet",
    "LabellingPolicy",
    "distill",
    "expert_rollout",
    "fine_tune",
    "label_days",
    "save_networks",
]

#: Training-stream index of the first labelled day: past the DQN's episodes, the pilot, selection and
#: validation days (:mod:`wattsched.mig.partition.evaluate`).
DISTILL_DAY_OFFSET = 3_000_000
_REPORT_FILE = "distill.json"


@dataclass(frozen=True)
class DistillConfig:
    """How many days are labelled, by which rollout, and how the networks are fine-tuned."""

    #: Training-stream days labelled in each round.
    days: int = 100
    #: Training-stream index of round 1's first day; round ``r`` labels the ``days`` after round ``r - 1``'s.
    first_day: int = DISTILL_DAY_OFFSET
    #: 1: the states the rollout visits; each further round adds the states the distilled network visits.
    rounds: int = 1
    #: The expert rollout's sampled days and candidates (the study's: 2 and 3).
    scenarios: int = 2
    candidates: int = 3
    #: Passes over the samples in each round's fine-tuning, and the minibatch size.
    epochs: int = 10
    batch_size: int = 256
    learning_rate: float = 1e-4
    #: Scale of the Q-values in the softmax (Q units: the reward's, times ``reward_scale``).
    temperature: float = 0.1
    anchor_weight: float = 1.0
    seed: int = 0
    #: After the rounds, fit the *original* networks once more on every round's samples for this many epochs
    #: with the ``refit_*`` settings (0: no refit; the result is the last round's networks).
    refit_epochs: int = 0
    refit_learning_rate: float = 3e-4
    refit_temperature: float = 0.3
    refit_anchor_weight: float = 0.01

    def __post_init__(self) -> None:
        if self.days < 1 or self.rounds < 1 or self.epochs < 1 or self.batch_size < 1:
            raise ConfigError(
                f"distillation needs days, rounds, epochs and batch_size >= 1, got {self.days}, "
                f"{self.rounds}, {self.epochs}, {self.batch_size}"
            )
        if (
            self.first_day < 0
            or not self.temperature > 0
            or self.anchor_weight < 0
            or self.learning_rate <= 0
        ):
            raise ConfigError(
                "distillation needs first_day >= 0, temperature > 0, anchor_weight >= 0, lr > 0"
            )
        if self.refit_epochs < 0 or not self.refit_temperature > 0 or self.refit_anchor_weight < 0:
            raise ConfigError(
                "the refit needs refit_epochs >= 0, refit_temperature > 0, refit_anchor_weight >= 0"
            )
        if self.refit_learning_rate <= 0:
            raise ConfigError(f"refit_learning_rate must be > 0, got {self.refit_learning_rate}")

    def refit(self) -> DistillConfig:
        """The settings of the refit as round settings (seed: ``seed + rounds``)."""
        return replace(
            self,
            epochs=self.refit_epochs,
            learning_rate=self.refit_learning_rate,
            temperature=self.refit_temperature,
            anchor_weight=self.refit_anchor_weight,
            seed=self.seed + self.rounds,
        )


@dataclass(frozen=True)
class DistillationSet:
    """Samples as arrays: ``observations`` (n, inputs), ``allowed`` (n, actions), ``labels`` (n,) the
    expert's action, ``actor`` (n,) the action the actor took, ``planned`` (n,) whether the expert simulated
    candidates there (jobs present, more than one allowed), ``days`` (n,) the training-stream day."""

    observations: np.ndarray
    allowed: np.ndarray
    labels: np.ndarray
    actor: np.ndarray
    planned: np.ndarray
    days: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @classmethod
    def concatenate(cls, parts: Sequence[DistillationSet]) -> DistillationSet:
        names = ("observations", "allowed", "labels", "actor", "planned", "days")
        return cls(*(np.concatenate([getattr(p, n) for p in parts]) for n in names))

    def agreement(self) -> float:
        """Share of the planned samples where the actor took the expert's action."""
        planned = self.planned
        return float((self.labels[planned] == self.actor[planned]).mean()) if planned.any() else 1.0


@dataclass
class LabellingPolicy:
    """A repartitioning policy that applies ``actor``'s choice (``None``: the expert's) and records, at every
    decision epoch, the ``expert`` rollout's choice in the same state; ``observer`` is the DQN whose
    observation and mask the samples hold (the expert's base)."""

    expert: RolloutPartitioner
    observer: DQNPartitioner
    actor: DQNPartitioner | None = None
    name: str = "labelling"
    scheduler: str = field(default="", init=False)
    rows: list[tuple[np.ndarray, np.ndarray, int, int, bool]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.scheduler = self.expert.scheduler

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self.expert.reset(gpu, seed)
        self.observer.reset(gpu, seed)
        if self.actor is not None:
            self.actor.reset(gpu, seed)
        self.rows = []

    def initial_configuration(self) -> ConfigId:
        return self.expert.initial_configuration()

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        plan = self.expert.plan(snapshot)
        choice = plan.choice if self.actor is None else self.actor.decide(snapshot)
        observation = self.observer.observe(snapshot)
        label = self.observer.action_index(plan.choice)
        self.rows.append(
            (
                observation,
                self.observer.allowed(observation),
                label,
                self.observer.action_index(choice),
                bool(plan.costs),
            )
        )
        return choice


def _label_day(policy: LabellingPolicy, seed: int, day: int) -> DistillationSet:
    """One training-stream day labelled (process-pool entry)."""
    env = policy.observer.env
    assert env is not None
    spec = env.workload()
    jobs = generate_jobs(spec, day_seed(seed, DayStream.TRAINING, day))
    run_day(
        jobs, policy, horizon_s=spec.horizon_s, gpu=env.gpu, seed=day, repartition_mode=env.repartition_mode
    )
    rows = policy.rows
    return DistillationSet(
        np.asarray([r[0] for r in rows], dtype=np.float32),
        np.asarray([r[1] for r in rows], dtype=bool),
        np.asarray([r[2] for r in rows], dtype=np.int64),
        np.asarray([r[3] for r in rows], dtype=np.int64),
        np.asarray([r[4] for r in rows], dtype=bool),
        np.full(len(rows), day, dtype=np.int64),
    )


def expert_rollout(model_path: str | Path, config: DistillConfig) -> RolloutPartitioner:
    """The rollout over the DQN at ``model_path`` with ``config``'s sampled days and candidates, its ``a`` and
    job norm from the DQN's reward (the study's ``dynamic-rollout`` at the defaults)."""
    base = DQNPartitioner.from_file(model_path)
    env = base.env
    assert env is not None
    reward = env.reward_spec()
    return RolloutPartitioner(
        base,
        reward.et_coefficient,
        reward.jobs_norm,
        scenarios=config.scenarios,
        candidates=config.candidates,
        workload=env.workload(),
        name="distill-expert",
    )


def label_days(
    model_path: str | Path,
    days: Sequence[int],
    config: DistillConfig,
    *,
    actor_path: str | Path | None = None,
    seed: int = 0,
    workers: int = 1,
) -> DistillationSet:
    """Training-stream days ``days`` of ``seed`` labelled by the rollout over the DQN at ``model_path``, with
    the DQN at ``actor_path`` acting (``None``: the rollout acts). ``workers`` > 1 labels the days in that
    many spawned processes (the same samples, in ``days`` order)."""
    policy = LabellingPolicy(
        expert_rollout(model_path, config),
        DQNPartitioner.from_file(model_path),
        None if actor_path is None else DQNPartitioner.from_file(actor_path),
    )
    if workers <= 1 or len(days) <= 1:
        return DistillationSet.concatenate([_label_day(policy, seed, d) for d in days])
    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold torch threads
    with ProcessPoolExecutor(min(workers, len(days)), mp_context=context) as pool:
        futures = [pool.submit(_label_day, policy, seed, d) for d in days]
        return DistillationSet.concatenate([f.result() for f in futures])


@dataclass(frozen=True)
class DistillResult:
    """``model_path``: the distilled model; ``rounds``: per round its samples, the actor's agreement with
    the expert on them, and the fine-tuning loss per epoch."""

    model_path: Path
    rounds: tuple[dict[str, Any], ...]


def fine_tune(models: Sequence[Any], data: DistillationSet, config: DistillConfig) -> list[float]:
    """Fine-tune the SB3 models ``models`` (an ensemble's acting networks, in place) on ``data`` (module
    docstring); returns the mean loss of each epoch. Deterministic for ``config.seed``."""
    import torch

    torch.manual_seed(config.seed)
    nets = [m.q_net.q_net for m in models]
    obs = torch.as_tensor(data.observations, dtype=torch.float32)
    allowed = torch.as_tensor(data.allowed)
    labels = torch.as_tensor(data.labels)
    if not bool(allowed[torch.arange(len(labels)), labels].all()):
        raise ConfigError("every label must be an allowed action of its sample")
    with torch.no_grad():
        before = torch.stack([net(obs) for net in nets])
    parameters = [p for net in nets for p in net.parameters()]
    optimiser = torch.optim.Adam(parameters, lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    tau = config.temperature
    losses = []
    for _ in range(config.epochs):
        order = torch.randperm(len(labels), generator=generator)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            q = torch.stack([net(obs[batch]) for net in nets])
            mask = allowed[batch]
            logits = (q.mean(dim=0) / tau).masked_fill(~mask, float("-inf"))
            loss = torch.nn.functional.cross_entropy(logits, labels[batch])
            change = ((q - before[:, batch]) / tau) ** 2
            loss = loss + config.anchor_weight * change.masked_select(mask.expand_as(change)).mean()
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
            optimiser.step()
            total += float(loss.detach()) * len(batch)
        losses.append(total / len(labels))
    for model in models:  # the target network is not used to act; keep it equal for a consistent file
        model.q_net_target.load_state_dict(model.q_net.state_dict())
    return losses


def save_networks(models: Sequence[Any], config: DQNConfig, out: str | Path) -> Path:
    """Save fine-tuned acting networks ``models`` as a model in ``out`` (``dqn_model.zip``, members beside
    it) with ``config`` acting with all of them."""
    acting = replace(config, ensemble=len(models), ensemble_keep=len(models))
    path = save_model(models[0], acting, Path(out) / MODEL_FILE)
    for index, model in enumerate(models[1:], start=1):
        model.save(str(member_path(path, index)))
    return path


def distill(
    model_path: str | Path, out_dir: str | Path, config: DistillConfig, *, seed: int = 0, workers: int = 1
) -> DistillResult:
    """The DQN at ``model_path`` distilled from its rollout (module docstring) into ``out_dir``; days of the
    training stream of ``seed``; ``workers`` processes label the days."""
    import torch

    torch.set_num_threads(1)
    dqn_config = load_config(model_path)
    models = [load_model(member_path(model_path, k)) for k in range(dqn_config.networks)]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts: list[DistillationSet] = []
    report: list[dict[str, Any]] = []
    actor: Path | None = None
    for round_index in range(config.rounds):
        first = config.first_day + round_index * config.days
        days = range(first, first + config.days)
        part = label_days(model_path, days, config, actor_path=actor, seed=seed, workers=workers)
        parts.append(part)
        losses = fine_tune(
            models, DistillationSet.concatenate(parts), replace(config, seed=config.seed + round_index)
        )
        actor = save_networks(models, dqn_config, out)
        report.append(
            {
                "days": [first, first + config.days],
                "samples": len(part),
                "planned": int(part.planned.sum()),
                "actor_agreement": part.agreement(),
                "loss_per_epoch": losses,
            }
        )
    if config.refit_epochs:
        originals = [load_model(member_path(model_path, k)) for k in range(dqn_config.networks)]
        losses = fine_tune(originals, DistillationSet.concatenate(parts), config.refit())
        actor = save_networks(originals, dqn_config, out)
        report.append({"refit": True, "samples": sum(len(p) for p in parts), "loss_per_epoch": losses})
    (out / _REPORT_FILE).write_text(
        json.dumps(
            {"config": asdict(config), "seed": seed, "source": str(model_path), "rounds": report}, indent=2
        ),
        encoding="utf-8",
    )
    assert actor is not None
    return DistillResult(actor, tuple(report))
