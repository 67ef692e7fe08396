"""DQN training for the repartitioning agent with stable-baselines3 (papers.md §A.6.4).

:class:`DQNConfig` holds the hyperparameters with the §A.6.4 defaults (paper scale); :func:`quick_config`
is the
reduced setting that trains within the ``make reproduce`` budget on 2 CPU cores. Speed choices for quick
scale,
each a field here: a 64-64 MLP instead of 128-128 (the forward/backward pass dominates a step), ``train_freq``
4 with one gradient step (SB3's default; a quarter of the updates of "train every step"), a target update
every
1,000 *environment* steps (SB3 counts env steps, which equals gradient steps only when train_freq is 1), one
torch thread (more threads only add contention for a 64-wide net).

Artefacts: ``<out>/dqn_model.zip`` (SB3 format) and ``<out>/dqn_model.json`` (this config, for evaluation),
``<out>/checkpoints/`` when ``checkpoint_every_steps`` > 0. Writes are atomic.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from wattsched.errors import ConfigError, InputError
from wattsched.rl.env import EnvConfig, MigRepartitionEnv

__all__ = [
    "MODEL_FILE",
    "DQNConfig",
    "TrainResult",
    "load_config",
    "load_model",
    "quick_config",
    "save_model",
    "train",
]

LOG = logging.getLogger(__name__)
MODEL_FILE = "dqn_model.zip"
_CONFIG_SUFFIX = ".json"


@dataclass(frozen=True)
class DQNConfig:
    """Hyperparameters (defaults: papers.md §A.6.4, all PROPOSED there) and the training length."""

    net_arch: tuple[int, ...] = (128, 128)
    learning_rate: float = 1e-3
    buffer_size: int = 100_000
    batch_size: int = 64
    learning_starts: int = 1_000
    train_freq: int = 1
    gradient_steps: int = 1
    target_update_interval: int = 1_000
    exploration_fraction: float = 0.5
    exploration_initial_eps: float = 1.0
    exploration_final_eps: float = 0.05
    gamma: float = 0.99
    #: Training length in episodes (days); converted with ``steps_per_episode`` unless ``total_timesteps``.
    episodes: int = 2_000
    steps_per_episode: int = 420
    total_timesteps: int | None = None
    seed: int = 0
    torch_threads: int = 1
    checkpoint_every_steps: int = 0
    #: Every this many steps, score the greedy policy on ``validation_days`` training-stream days (never the
    #: held-out days) and keep the best weights (0: keep the final weights). Guards against a late dip of the
    #: noisy Q-learning curve.
    select_best_every: int = 0
    validation_days: int = 10
    env: EnvConfig = field(default_factory=EnvConfig)

    def __post_init__(self) -> None:
        if not self.net_arch or any(w <= 0 for w in self.net_arch):
            raise ConfigError(f"net_arch needs positive layer widths, got {self.net_arch!r}")
        if self.episodes <= 0 and not self.total_timesteps:
            raise ConfigError("training needs episodes > 0 or total_timesteps > 0")
        if self.total_timesteps is not None and self.total_timesteps <= 0:
            raise ConfigError(f"total_timesteps must be > 0, got {self.total_timesteps}")
        if not 0.0 <= self.exploration_final_eps <= self.exploration_initial_eps <= 1.0:
            raise ConfigError("need 0 <= exploration_final_eps <= exploration_initial_eps <= 1")

    @property
    def timesteps(self) -> int:
        return self.total_timesteps or self.episodes * self.steps_per_episode

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DQNConfig:
        data = dict(data)
        env = EnvConfig(**data.pop("env", {}))
        data["net_arch"] = tuple(data.get("net_arch", (128, 128)))
        return cls(env=env, **data)


def quick_config(**overrides: Any) -> DQNConfig:
    """The quick-scale setting: 120,000 steps (about 290 days), a 64-64 net, training every 4 steps.

    About 3 minutes on one free CPU core (≈ 700 steps/s measured: simulator step + SB3 overhead + updates).
    """
    base = DQNConfig(
        net_arch=(64, 64),
        buffer_size=50_000,
        learning_starts=1_000,
        train_freq=4,
        gradient_steps=1,
        target_update_interval=1_000,
        exploration_fraction=0.3,
        total_timesteps=120_000,
        select_best_every=20_000,
    )
    return replace(base, **overrides)


@dataclass(frozen=True)
class TrainResult:
    model_path: Path
    timesteps: int
    wall_s: float


def _model_kwargs(config: DQNConfig) -> dict[str, Any]:
    return {
        "learning_rate": config.learning_rate,
        "buffer_size": config.buffer_size,
        "batch_size": config.batch_size,
        "learning_starts": config.learning_starts,
        "train_freq": config.train_freq,
        "gradient_steps": config.gradient_steps,
        "target_update_interval": config.target_update_interval,
        "exploration_fraction": config.exploration_fraction,
        "exploration_initial_eps": config.exploration_initial_eps,
        "exploration_final_eps": config.exploration_final_eps,
        "gamma": config.gamma,
        "policy_kwargs": {"net_arch": list(config.net_arch)},
        "seed": config.seed,
        "device": "cpu",
        "verbose": 0,
    }


def build_model(config: DQNConfig) -> Any:
    """An untrained SB3 DQN on a fresh environment (torch imported here, never at module import)."""
    import torch
    from stable_baselines3 import DQN

    torch.set_num_threads(config.torch_threads)
    env = MigRepartitionEnv(config.env)
    return DQN("MlpPolicy", env, **_model_kwargs(config))


def train(config: DQNConfig, out_dir: str | Path, *, callback: Any = None) -> TrainResult:
    """Train, save ``out_dir/dqn_model.zip`` (+ its config), and return the path and wall time."""
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    model = build_model(config)
    callbacks = [callback] if callback is not None else []
    if config.checkpoint_every_steps > 0:
        callbacks.append(CheckpointCallback(config.checkpoint_every_steps, str(out / "checkpoints"), "dqn"))
    LOG.info("training DQN for %d steps", config.timesteps)
    keeper = _BestKeeper(config) if config.select_best_every > 0 else None
    if keeper is not None:
        callbacks.append(keeper.callback())
    model.learn(total_timesteps=config.timesteps, callback=CallbackList(callbacks) if callbacks else None)
    if keeper is not None:
        keeper.finish(model)
    wall_s = time.perf_counter() - start
    path = save_model(model, config, out / MODEL_FILE)
    return TrainResult(path, config.timesteps, wall_s)


#: Validation days are training-stream days from this index on (episodes use 0, 1, 2, ...).
VALIDATION_DAY_OFFSET = 2_000_000


class _BestKeeper:
    """Scores the greedy policy periodically on validation days; restores the best weights at the end."""

    def __init__(self, config: DQNConfig) -> None:
        self.config = config
        self.best_score = float("inf")
        self.best_state: dict[str, Any] | None = None

    def score(self, model: Any) -> float:
        from wattsched.mig.partition.evaluate import evaluate_policy
        from wattsched.rl.partitioner import DQNPartitioner

        env = self.config.env
        reward = env.reward_spec()
        days = range(VALIDATION_DAY_OFFSET, VALIDATION_DAY_OFFSET + self.config.validation_days)
        policy = DQNPartitioner.from_model(model, env.initial_configuration)
        rows = evaluate_policy(
            "dqn",
            policy,
            days,
            self.config.seed,
            env.workload(),
            held_out=False,
            repartition_mode=env.repartition_mode,
        )
        a = reward.et_coefficient
        return sum(a * r["energy_j"] + r["avg_tardiness_s"] / 60.0 for r in rows) / len(rows)

    def consider(self, model: Any) -> None:
        import copy

        value = self.score(model)
        LOG.info("validation score %.4f at step %d", value, model.num_timesteps)
        if value < self.best_score:
            self.best_score = value
            self.best_state = copy.deepcopy(model.policy.state_dict())

    def callback(self) -> Any:
        from stable_baselines3.common.callbacks import BaseCallback

        keeper = self

        class _Select(BaseCallback):
            def _on_step(self) -> bool:
                if self.num_timesteps % keeper.config.select_best_every == 0:
                    keeper.consider(self.model)
                return True

        return _Select()

    def finish(self, model: Any) -> None:
        if model.num_timesteps % self.config.select_best_every:  # the last step was not scored yet
            self.consider(model)
        if self.best_state is not None:
            model.policy.load_state_dict(self.best_state)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def save_model(model: Any, config: DQNConfig, path: str | Path) -> Path:
    """Save the SB3 model to ``path`` (a ``.zip``) and its config beside it, both atomically."""
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    tmp = path.with_name(f".{path.stem}.tmp.zip")
    model.save(str(tmp))
    os.replace(tmp, path)
    _atomic_write_text(path.with_suffix(_CONFIG_SUFFIX), json.dumps(config.to_json(), indent=2))
    return path


def load_config(path: str | Path) -> DQNConfig:
    """The config saved beside a model (defaults when the sidecar file is missing)."""
    sidecar = Path(path).with_suffix(_CONFIG_SUFFIX)
    if not sidecar.exists():
        return DQNConfig()
    try:
        return DQNConfig.from_json(json.loads(sidecar.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError) as exc:
        raise InputError(f"invalid DQN config ({exc})", path=str(sidecar)) from None


def load_model(path: str | Path) -> Any:
    """Load a saved SB3 DQN (CPU)."""
    from stable_baselines3 import DQN

    path = Path(path)
    if not path.is_file():
        raise InputError("no such model file", path=str(path))
    try:
        return DQN.load(str(path), device="cpu")
    except (ValueError, KeyError, OSError, RuntimeError) as exc:
        raise InputError(
            f"not a stable-baselines3 DQN model ({type(exc).__name__}: {exc})", path=str(path)
        ) from None
