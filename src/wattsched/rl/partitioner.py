"""A trained DQN as an ordinary repartitioning policy ("dynamic" in Table III).

The training config saved beside the model says how to observe (P1's state, queue blocks), which
configurations the actions are and whether actions are masked; the partitioner repeats exactly that.

The SB3 model is loaded once (torch/SB3 imported lazily, only here and in :mod:`wattsched.rl`); its Q-network
weights are then copied into numpy so each decision is a few small matrix products, with the same greedy
action as ``model.predict(obs, deterministic=True)``. An ensemble (``DQNConfig.ensemble`` > 1) acts on the
mean of its members' Q-values (:class:`QEnsemble`), its members read from beside the model file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig import SimSnapshot
from wattsched.mig.partition.base import PARTITIONERS, ConfigId
from wattsched.rl.config import EnvConfig
from wattsched.rl.masking import ActionMask
from wattsched.rl.observation import ObservationSpec, snapshot_observation

__all__ = ["DQNPartitioner", "QEnsemble", "QNetwork"]


@dataclass(frozen=True)
class QNetwork:
    """An MLP with ReLU between layers: ``weights[i]`` has shape (out, in) as in ``torch.nn.Linear``."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    @property
    def inputs(self) -> int:
        return int(self.weights[0].shape[1])

    @property
    def outputs(self) -> int:
        return int(self.biases[-1].shape[0])

    def q_values(self, observation: np.ndarray) -> np.ndarray:
        hidden = np.asarray(observation, dtype=np.float64)
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            hidden = weight @ hidden + bias
            if index < last:
                hidden = np.maximum(hidden, 0.0)
        return hidden

    @classmethod
    def from_sb3(cls, model: Any) -> QNetwork:
        """Copy the online Q-network of an SB3 ``DQN`` (an ``nn.Sequential`` of Linear and ReLU)."""
        import torch

        layers = [m for m in model.q_net.q_net if isinstance(m, torch.nn.Linear)]
        if not layers or any(not isinstance(m, torch.nn.Linear | torch.nn.ReLU) for m in model.q_net.q_net):
            raise ValueError("expected an MLP Q-network of Linear and ReLU layers")
        weights = tuple(m.weight.detach().cpu().numpy().astype(np.float64) for m in layers)
        biases = tuple(m.bias.detach().cpu().numpy().astype(np.float64) for m in layers)
        return cls(weights, biases)


@dataclass(frozen=True)
class QEnsemble:
    """Independently trained Q-networks of one architecture acting together: the Q-values are the members'
    mean. The members' layers are stacked so that one decision is one matrix product per layer; the values
    are bit for bit those of evaluating each member and summing in member order."""

    members: tuple[QNetwork, ...]

    def __post_init__(self) -> None:
        if not self.members:
            raise ValueError("an ensemble needs at least one Q-network")
        shapes = {tuple(w.shape for w in m.weights) for m in self.members}
        if len(shapes) > 1:
            raise ValueError(f"ensemble members differ in their layer shapes: {sorted(shapes)}")

    @property
    def inputs(self) -> int:
        return self.members[0].inputs

    @property
    def outputs(self) -> int:
        return self.members[0].outputs

    @cached_property
    def _stacked(self) -> tuple[np.ndarray, np.ndarray, tuple[tuple[np.ndarray, np.ndarray], ...]]:
        first = np.concatenate([m.weights[0] for m in self.members])
        first_bias = np.concatenate([m.biases[0] for m in self.members])
        rest = tuple(
            (np.stack([m.weights[i] for m in self.members]), np.stack([m.biases[i] for m in self.members]))
            for i in range(1, len(self.members[0].weights))
        )
        return first, first_bias, rest

    def q_values(self, observation: np.ndarray) -> np.ndarray:
        first, first_bias, rest = self._stacked
        count = len(self.members)
        # Row k of ``hidden`` is member k's layer output; the first layer is one (members x out, in) product.
        hidden = (first @ np.asarray(observation, dtype=np.float64) + first_bias).reshape(count, -1)
        for weight, bias in rest:
            hidden = np.matmul(weight, np.maximum(hidden, 0.0)[:, :, None])[:, :, 0] + bias
        total: np.ndarray = hidden.sum(axis=0)  # along the members: m0 + m1 + ... in order
        return total / count


@dataclass
class DQNPartitioner:
    """Greedy actions of a trained Q-network; action k = the k-th configuration of ``env.action_ids(gpu)``
    (all of the GPU's configurations unless the training config restricted them). ``env`` is the training
    environment's config (observation blocks, action set, mask); ``None``: P1's state over every
    configuration. ``initial=None`` starts in the GPU's "initial" role."""

    network: QNetwork | QEnsemble
    initial: ConfigId | None = None
    scheduler: str = "edf-ss-restricted"
    name: str = "dynamic"
    env: EnvConfig | None = None
    _spec: ObservationSpec | None = field(default=None, repr=False)
    _actions: tuple[ConfigId, ...] = field(default=(), repr=False)
    _mask: ActionMask | None = field(default=None, repr=False)
    _initial: ConfigId | None = field(default=None, repr=False)

    @classmethod
    def from_file(cls, path: str | Path) -> DQNPartitioner:
        """The model at ``path`` with its saved config; an ensemble's members are read from beside it."""
        from wattsched.rl.dqn import load_config, load_model, member_path

        config = load_config(path)
        nets = [QNetwork.from_sb3(load_model(member_path(path, k))) for k in range(config.networks)]
        network = nets[0] if len(nets) == 1 else QEnsemble(tuple(nets))
        return cls(network, config.env.initial_configuration, config.env.scheduler, env=config.env)

    @classmethod
    def from_model(
        cls, model: Any, initial: ConfigId | None = None, env: EnvConfig | None = None
    ) -> DQNPartitioner:
        scheduler = env.scheduler if env is not None else "edf-ss-restricted"
        return cls(QNetwork.from_sb3(model), initial, scheduler, env=env)

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        del seed
        env = self.env if self.env is not None else EnvConfig()
        spec = env.observation_spec(gpu)
        actions = env.action_ids(gpu)
        outputs, inputs = self.network.outputs, self.network.inputs
        if outputs != len(actions) or inputs != spec.size:
            raise ConfigError(
                f"this DQN was trained for {outputs} actions and {inputs} inputs; with its training config, "
                f"{gpu.name} gives {len(actions)} actions ({spec.size} inputs)"
            )
        self._spec, self._actions = spec, actions
        self._mask = ActionMask.idle_slices(gpu, spec, actions) if env.mask_idle_slices else None
        initial = self.initial if self.initial is not None else gpu.role("initial")
        self._initial = gpu.configuration(initial).ident

    def initial_configuration(self) -> ConfigId:
        if self._initial is None:
            raise RuntimeError("call reset(gpu) before initial_configuration()")
        return self._initial

    def action(self, observation: np.ndarray) -> int:
        """The greedy action (masked actions excluded when the training config masked them)."""
        return int(np.argmax(self._masked_q(observation)))

    def allowed(self, observation: np.ndarray) -> np.ndarray:
        """Which actions the training config's mask allows for ``observation`` (all without a mask)."""
        if self._mask is None:
            return np.ones(self.network.outputs, dtype=bool)
        allowed: np.ndarray = self._mask.of(observation)
        return allowed

    def action_index(self, configuration: ConfigId) -> int:
        """The action that chooses ``configuration``."""
        if configuration not in self._actions:
            raise ConfigError(
                f"configuration {configuration!r} is none of this DQN's actions {list(self._actions)}"
            )
        return self._actions.index(configuration)

    def _masked_q(self, observation: np.ndarray) -> np.ndarray:
        q_values = self.network.q_values(observation)
        if self._mask is not None:
            q_values = np.where(self._mask.of(observation), q_values, -np.inf)
        return q_values

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        return self._actions[self.action(self._observe(snapshot))]

    def ranked(self, snapshot: SimSnapshot) -> list[ConfigId]:
        """The configurations the network allows here (masked ones left out), highest Q-value first (ties:
        action order, so the first is :meth:`decide`'s choice); what a rollout tries
        (:class:`~wattsched.mig.partition.rollout.RolloutPartitioner`)."""
        q_values = self._masked_q(self._observe(snapshot))
        order = np.argsort(-q_values, kind="stable")
        return [self._actions[int(k)] for k in order if np.isfinite(q_values[k])]

    def observe(self, snapshot: SimSnapshot) -> np.ndarray:
        """The network's input for ``snapshot`` (the training environment's observation)."""
        return self._observe(snapshot)

    def _observe(self, snapshot: SimSnapshot) -> np.ndarray:
        if self._spec is None:
            raise RuntimeError("call reset(gpu) before decide()")
        return snapshot_observation(snapshot, self._spec)


@PARTITIONERS.register("dynamic")
def _make_dynamic(model_path: str | Path) -> DQNPartitioner:
    return DQNPartitioner.from_file(model_path)
