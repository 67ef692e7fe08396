"""A trained DQN as an ordinary repartitioning policy ("dynamic" in Table III).

The SB3 model is loaded once (torch/SB3 imported lazily, only here and in :mod:`wattsched.rl`); its Q-network
weights are then copied into numpy so each decision is a few small matrix products, with the same greedy
action
as ``model.predict(obs, deterministic=True)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.mig.partition.base import MIG_CONFIGURATIONS, PARTITIONERS, ConfigId

__all__ = ["DQNPartitioner", "QNetwork"]


@dataclass(frozen=True)
class QNetwork:
    """An MLP with ReLU between layers: ``weights[i]`` has shape (out, in) as in ``torch.nn.Linear``."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

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


@dataclass
class DQNPartitioner:
    """Greedy actions of a trained Q-network over the §A.6.1 observation; action k = configuration k + 1."""

    network: QNetwork
    initial: ConfigId = 2
    scheduler: str = "edf-ss-restricted"
    name: str = "dynamic"
    _spec: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from wattsched.rl.observation import ObservationSpec

        self._spec = ObservationSpec()

    @classmethod
    def from_file(cls, path: str | Path) -> DQNPartitioner:
        from wattsched.rl.dqn import load_config, load_model

        model = load_model(path)
        config = load_config(path)
        return cls(QNetwork.from_sb3(model), config.env.initial_configuration, config.env.scheduler)

    @classmethod
    def from_model(cls, model: Any, initial: ConfigId = 2) -> DQNPartitioner:
        return cls(QNetwork.from_sb3(model), initial)

    def reset(self, seed: int | None = None) -> None:
        del seed

    def initial_configuration(self) -> ConfigId:
        return self.initial

    def action(self, observation: np.ndarray) -> int:
        return int(np.argmax(self.network.q_values(observation)))

    def decide(self, snapshot: Any) -> ConfigId:
        from wattsched.rl.observation import snapshot_observation

        return MIG_CONFIGURATIONS[self.action(snapshot_observation(snapshot, self._spec))]


@PARTITIONERS.register("dynamic")
def _make_dynamic(model_path: str | Path) -> DQNPartitioner:
    return DQNPartitioner.from_file(model_path)
