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

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig import SimSnapshot
from wattsched.mig.partition.base import PARTITIONERS, ConfigId

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
    """Greedy actions of a trained Q-network over the §A.6.1 observation; action k = the GPU's k-th
    configuration (``gpu.configuration_ids[k]``). ``initial=None`` starts in the GPU's "initial" role."""

    network: QNetwork
    initial: ConfigId | None = None
    scheduler: str = "edf-ss-restricted"
    name: str = "dynamic"
    _spec: Any = field(default=None, repr=False)
    _initial: ConfigId | None = field(default=None, repr=False)

    @classmethod
    def from_file(cls, path: str | Path) -> DQNPartitioner:
        from wattsched.rl.dqn import load_config, load_model

        model = load_model(path)
        config = load_config(path)
        return cls(QNetwork.from_sb3(model), config.env.initial_configuration, config.env.scheduler)

    @classmethod
    def from_model(cls, model: Any, initial: ConfigId | None = None) -> DQNPartitioner:
        return cls(QNetwork.from_sb3(model), initial)

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        from wattsched.rl.observation import ObservationSpec

        del seed
        spec = ObservationSpec.for_gpu(gpu)
        actions = self.network.biases[-1].shape[0]
        if actions != spec.n_configurations or self.network.weights[0].shape[1] != spec.size:
            raise ConfigError(
                f"this DQN was trained for {actions} configurations and {self.network.weights[0].shape[1]} "
                f"inputs; {gpu.name} has {spec.n_configurations} configurations ({spec.size} inputs)"
            )
        self._spec = spec
        initial = self.initial if self.initial is not None else gpu.role("initial")
        self._initial = gpu.configuration(initial).ident

    def initial_configuration(self) -> ConfigId:
        if self._initial is None:
            raise RuntimeError("call reset(gpu) before initial_configuration()")
        return self._initial

    def action(self, observation: np.ndarray) -> int:
        return int(np.argmax(self.network.q_values(observation)))

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        from wattsched.rl.observation import snapshot_observation

        return self._spec.configurations[self.action(snapshot_observation(snapshot, self._spec))]


@PARTITIONERS.register("dynamic")
def _make_dynamic(model_path: str | Path) -> DQNPartitioner:
    return DQNPartitioner.from_file(model_path)
