"""DQN training for the repartitioning agent with stable-baselines3.

:class:`DQNConfig` holds the hyperparameters with defaults for the paper scale (P1 gives none; ours, P1's
state and reward).
:func:`quick_config` is the setting that trains within 10 minutes on this 2-core machine and that we
recommend: on top of the speed choices below it adds the changes listed in :data:`QUICK_CHANGES` (each
measured by the ablation of ``benchmarks/bench_dqn.py``). :func:`paper_config` is the quick setting at the
paper preset's load; :func:`p1_config` is the quick setting without those changes.

Speed choices, each a field here: a 64-64 MLP instead of 128-128 (the forward/backward pass dominates a
step), ``train_freq`` 4 with one gradient step (SB3's default; a quarter of the updates of "train every
step"), a target update every 1,000 *environment* steps (SB3 counts env steps, which equals gradient steps
only when train_freq is 1), one torch thread (more threads only add contention for a 64-wide net).

The algorithm is :class:`wattsched.rl.algorithm.MaskedDQN` (SB3's DQN plus the action mask and an optional
double-DQN target). Artefacts: ``<out>/dqn_model.zip`` (SB3 format) and ``<out>/dqn_model.json`` (this
config, for evaluation), an ensemble's other members as ``<out>/dqn_model-member<k>.zip`` (and, when it
keeps the best of its networks, their validation costs in ``<out>/dqn_model.selection.json``),
``<out>/checkpoints/`` when ``checkpoint_every_steps`` > 0. Writes are atomic.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from wattsched.errors import ConfigError, InputError
from wattsched.rl.env import EnvConfig, MigRepartitionEnv
from wattsched.rl.masking import ActionMask

__all__ = [
    "MODEL_FILE",
    "QUICK_CHANGES",
    "DQNConfig",
    "TrainResult",
    "load_config",
    "load_model",
    "member_path",
    "p1_config",
    "paper_config",
    "quick_config",
    "save_model",
    "train",
    "validation_cost",
]

LOG = logging.getLogger(__name__)
MODEL_FILE = "dqn_model.zip"
_CONFIG_SUFFIX = ".json"


@dataclass(frozen=True)
class DQNConfig:
    """Hyperparameters (defaults: our proposal for P1's setting, which P1 does not publish) and the training
    length."""

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
    #: Environments stepped together (SB3 ``DummyVecEnv``; env ``i`` draws the training days of seed
    #: ``seed + i``). ``train_freq`` and ``target_update_interval`` count environment steps of all of them.
    n_envs: int = 1
    #: n-step returns (SB3's ``n_steps``; 1: one-step TD targets).
    n_steps: int = 1
    #: Double-DQN targets (:mod:`wattsched.rl.algorithm`); ``False``: SB3's max over the target network.
    double_q: bool = False
    #: Networks trained independently (member ``k`` as seed ``seed + k``, everything else equal) whose mean
    #: Q-values choose the action (:class:`~wattsched.rl.partitioner.QEnsemble`); 1: one network.
    ensemble: int = 1
    #: Of the ``ensemble`` networks, keep this many: those with the lowest validation cost on
    #: ``ensemble_days`` validation days common to all (0: keep every network).
    ensemble_keep: int = 0
    ensemble_days: int = 30
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
        shaping = self.env.shaping_gamma
        if shaping is not None and shaping != self.gamma:
            raise ConfigError(
                f"env.shaping_gamma ({shaping}) must equal gamma ({self.gamma}) for shaping to "
                "keep the optimal policy"
            )
        if self.n_envs < 1 or self.n_steps < 1:
            raise ConfigError(f"n_envs and n_steps must be >= 1, got {self.n_envs}, {self.n_steps}")
        if self.ensemble < 1:
            raise ConfigError(f"ensemble must be >= 1, got {self.ensemble}")
        if not 0 <= self.ensemble_keep <= self.ensemble or self.ensemble_days < 1:
            raise ConfigError(
                f"need 0 <= ensemble_keep <= ensemble ({self.ensemble}) and ensemble_days >= 1, got "
                f"ensemble_keep={self.ensemble_keep}, ensemble_days={self.ensemble_days}"
            )

    @property
    def timesteps(self) -> int:
        """Environment steps of one network (of each member of an ensemble)."""
        return self.total_timesteps or self.episodes * self.steps_per_episode

    @property
    def networks(self) -> int:
        """Networks the trained model acts with (``ensemble_keep`` of ``ensemble``, or all)."""
        return self.ensemble_keep or self.ensemble

    def with_ensemble(self, networks: int, keep: int | None = None) -> DQNConfig:
        """This config training ``networks`` networks of which ``keep`` act (``None``: as many as this
        config keeps, or all of them when that is more than ``networks``)."""
        if keep is None:
            keep = self.ensemble_keep if self.ensemble_keep <= networks else 0
        return replace(self, ensemble=networks, ensemble_keep=keep)

    def member(self, index: int) -> DQNConfig:
        """The single-network config of ensemble member ``index`` (seed ``seed + index``)."""
        if not 0 <= index < self.ensemble:
            raise ValueError(f"member index {index} outside 0..{self.ensemble - 1}")
        return replace(self, seed=self.seed + index, ensemble=1, ensemble_keep=0)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["env"] = self.env.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DQNConfig:
        data = dict(data)
        env = EnvConfig.from_json(data.pop("env", {}))
        data["net_arch"] = tuple(data.get("net_arch", (128, 128)))
        return cls(env=env, **data)


#: Fields of :func:`quick_config` that differ from P1's setting, with why; the ablation of
#: ``benchmarks/bench_dqn.py`` switches each off in turn.
QUICK_CHANGES: dict[str, str] = {
    "count_bins": "job-count block in the state (P1's three job slots cannot tell 3 jobs from 9)",
    "mask_idle_slices": "no switch to a configuration with more slices than jobs (wasted repartitions)",
    "shaping_gamma": "potential-based shaping: projected cost of the present jobs (credit assignment)",
    "n_steps": "3-step returns (faster propagation of the delayed lateness)",
    "learning_rate": "3e-4 instead of 1e-3 (less policy churn between checkpoints)",
    "n_envs": "4 environments stepped together (a quarter of the gradient steps: 2-3x faster training)",
    "ensemble": "8 networks trained (seeds seed..seed+7); one network's held-out gain varies by 6 points "
    "between seeds, and its validation cost ranks it (Spearman 0.99 over 16 seeds)",
    "ensemble_keep": "the 3 best of the 8 by validation cost act on their mean Q-values",
}


def quick_config(**overrides: Any) -> DQNConfig:
    """The quick-scale setting: 120,000 steps per network, a 64-64 net, one gradient step every 4 environment
    steps, and the changes of :data:`QUICK_CHANGES` (job-count state block, idle-slice mask, potential-based
    shaping, 3-step returns, learning rate 3e-4, 4 environments, 8 networks of which the 3 best on validation
    days act together). The load is the
    caller's (``env.rate_multiplier``, default 1: the literal preset); :func:`paper_config` is this at the
    paper preset.

    Speed on this 2-core machine: one network (4 environments) trains in 60-80 s, so the 8 take 8-10 min on
    one core and about half that with ``train(..., workers=2)``; choosing the 3 adds ~30 s
    (``benchmarks/bench_dqn.py`` prints the measured time and the load beside it).
    """
    base = DQNConfig(
        net_arch=(64, 64),
        learning_rate=3e-4,
        buffer_size=50_000,
        learning_starts=1_000,
        train_freq=4,
        gradient_steps=1,
        target_update_interval=1_000,
        exploration_fraction=0.3,
        gamma=0.99,
        n_steps=3,
        total_timesteps=120_000,
        select_best_every=10_000,
        n_envs=4,
        ensemble=8,
        ensemble_keep=3,
        env=EnvConfig(count_bins=12, mask_idle_slices=True, shaping_gamma=0.99),
    )
    return replace(base, **overrides)


def paper_config(**overrides: Any) -> DQNConfig:
    """:func:`quick_config` at the paper preset (docs/concepts/presets.md: rate multiplier 2.5, ~516
    jobs/day). Set ``env.et_coefficient`` from pilot runs at that load (``pilot_et_coefficient`` with the same
    workload)."""
    base = quick_config()
    return replace(replace(base, env=replace(base.env, rate_multiplier=2.5)), **overrides)


def p1_config(**overrides: Any) -> DQNConfig:
    """The quick setting before :data:`QUICK_CHANGES`: P1's state and reward, every configuration an action,
    SB3's one-step DQN at learning rate 1e-3, one network on one environment (what ``bench_dqn.py`` ablates
    against)."""
    base = quick_config()
    p1 = replace(
        base,
        learning_rate=1e-3,
        n_steps=1,
        n_envs=1,
        ensemble=1,
        ensemble_keep=0,
        env=replace(base.env, count_bins=0, mask_idle_slices=False, shaping_gamma=None),
    )
    return replace(p1, **overrides)


@dataclass(frozen=True)
class TrainResult:
    """``model_path``: the model to evaluate (an ensemble's first member, its config beside it);
    ``timesteps``: environment steps of all networks trained; ``wall_s``: training wall time (the choice of
    the kept networks included); ``members``: networks the model acts with; ``selection``: for an ensemble
    with ``ensemble_keep``, each trained network's seed and validation cost, best first (the member files
    are numbered in that order), and the kept seeds (also in ``dqn_model.selection.json``)."""

    model_path: Path
    timesteps: int
    wall_s: float
    members: int = 1
    selection: dict[str, Any] | None = None


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
        "n_steps": config.n_steps,
        "double_q": config.double_q,
        "seed": config.seed,
        "device": "cpu",
        "verbose": 0,
    }


def build_model(config: DQNConfig) -> Any:
    """An untrained DQN (:class:`wattsched.rl.algorithm.MaskedDQN`) on ``config.n_envs`` fresh environments
    (torch imported here, never at module import)."""
    import torch
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv

    from wattsched.hardware.catalogue import load_gpu
    from wattsched.rl.algorithm import MaskedDQN

    torch.set_num_threads(config.torch_threads)
    env: Any = MigRepartitionEnv(config.env)
    if config.n_envs > 1:
        env = DummyVecEnv([lambda: MigRepartitionEnv(config.env) for _ in range(config.n_envs)])
    policy_kwargs: dict[str, Any] = {"net_arch": list(config.net_arch)}
    if config.env.mask_idle_slices:
        gpu = load_gpu(config.env.gpu)
        spec = config.env.observation_spec(gpu)
        policy_kwargs["action_mask"] = ActionMask.idle_slices(gpu, spec, config.env.action_ids(gpu))
    model = MaskedDQN("MlpPolicy", env, policy_kwargs=policy_kwargs, **_model_kwargs(config))
    # A logger of our own: without one, every learn() leaves an empty SB3-<date> folder in the temp dir.
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def member_path(path: str | Path, index: int) -> Path:
    """The file of ensemble member ``index`` beside the model ``path`` (member 0 is ``path`` itself)."""
    path = Path(path)
    return path if index == 0 else path.with_name(f"{path.stem}-member{index}{path.suffix}")


def train(
    config: DQNConfig,
    out_dir: str | Path,
    *,
    callback: Any = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> TrainResult:
    """Train, save ``out_dir/dqn_model.zip`` (+ its config; an ensemble's other members beside it as
    ``dqn_model-member<k>.zip``), and return the path and wall time.

    ``workers`` > 1 trains that many ensemble members at once in fresh processes (the members do not
    depend on it: each is seeded on its own); ``callback`` (an SB3 callback) then sees no member.
    ``progress`` is called with the environment steps trained so far over all networks (non-decreasing,
    ending at ``config.timesteps * config.ensemble``): every few thousand steps in this process, once per
    finished network with ``workers`` > 1.
    """
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / MODEL_FILE
    start = time.perf_counter()
    members = [config.member(k) for k in range(config.ensemble)]
    paths = [member_path(path, k) for k in range(config.ensemble)]
    if workers > 1 and config.ensemble > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads
        with ProcessPoolExecutor(min(workers, config.ensemble), mp_context=context) as pool:
            jobs = [(m.to_json(), str(p)) for m, p in zip(members, paths, strict=True)]
            futures = [pool.submit(_train_member_file, *job) for job in jobs]
            for finished, future in enumerate(as_completed(futures), start=1):
                future.result()
                if progress is not None:
                    progress(finished * config.timesteps)
    else:
        for index, (member, target) in enumerate(zip(members, paths, strict=True)):
            checkpoints = out / "checkpoints" / (f"member{index}" if config.ensemble > 1 else "")
            counter = (
                None
                if progress is None
                else _step_counter(progress, index * config.timesteps, config.timesteps)
            )
            callbacks = [c for c in (callback, counter) if c is not None]
            _save_zip(_train_one(member, checkpoints, callbacks), target)
            if progress is not None:
                progress((index + 1) * config.timesteps)
    selection = _keep_best(config, paths) if config.ensemble_keep else None
    if selection is not None:
        _atomic_write_text(path.with_suffix(_SELECTION_SUFFIX), json.dumps(selection, indent=2))
    _save_config(config, path)
    wall_s = time.perf_counter() - start
    return TrainResult(path, config.timesteps * config.ensemble, wall_s, config.networks, selection)


#: Training-stream index of the first validation day of the ensemble choice (after the best-weights
#: check's days, so that member 0 is not scored on the days that chose its weights).
ENSEMBLE_DAY_OFFSET = 2_001_000
_SELECTION_SUFFIX = ".selection.json"


def validation_cost(config: DQNConfig, policy: Any, first_day: int, days: int) -> float:
    """Mean reward-scale cost ``a·E + T`` (``T`` in minutes) of ``policy`` on training-stream days
    ``first_day`` .. of ``config.seed`` (the env config's workload, GPU, power options, ``a`` and repartition
    mode: the simulator the network was trained on)."""
    from wattsched.mig.partition.evaluate import evaluate_policy

    env = config.env
    rows = evaluate_policy(
        "dqn",
        policy,
        range(first_day, first_day + days),
        config.seed,
        env.workload(),
        held_out=False,
        repartition_mode=env.repartition_mode,
        gpu=env.gpu,
        power_curve=env.power_curve,
        power_cap=env.power_cap,
    )
    a = env.reward_spec().et_coefficient
    return float(sum(a * r["energy_j"] + r["avg_tardiness_s"] / 60.0 for r in rows) / len(rows))


def _keep_best(config: DQNConfig, paths: list[Path]) -> dict[str, Any]:
    """Score every trained network on the common validation days and renumber the files best first: the
    model acts with members ``0 .. ensemble_keep - 1``; the others stay beside it for inspection."""
    from wattsched.rl.partitioner import DQNPartitioner

    env = config.env
    costs = []
    for index, member_file in enumerate(paths):
        policy = DQNPartitioner.from_model(load_model(member_file), env.initial_configuration, env)
        costs.append((validation_cost(config, policy, ENSEMBLE_DAY_OFFSET, config.ensemble_days), index))
    ranked = sorted(costs)
    staged = [p.with_name(f".{p.name}.ranked") for p in paths]
    for (_, index), target in zip(ranked, staged, strict=True):
        os.replace(paths[index], target)
    for target, final in zip(staged, paths, strict=True):
        os.replace(target, final)
    kept = [index for _, index in ranked[: config.ensemble_keep]]
    return {
        "validation_days": config.ensemble_days,
        "ranked": [{"seed": config.seed + i, "validation_cost": c} for c, i in ranked],
        "kept_seeds": [config.seed + i for i in kept],
    }


#: Environment steps between two calls of ``train``'s ``progress`` within one network.
_PROGRESS_EVERY = 2_000


def _step_counter(progress: Callable[[int], None], offset: int, timesteps: int) -> Any:
    """An SB3 callback reporting ``offset`` + the network's steps (at most ``timesteps``) to ``progress``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class _Steps(BaseCallback):
        last = 0

        def _on_step(self) -> bool:
            if self.num_timesteps - self.last >= _PROGRESS_EVERY:
                self.last = self.num_timesteps
                progress(offset + min(self.num_timesteps, timesteps))
            return True

    return _Steps()


def _train_one(config: DQNConfig, checkpoints: Path, callbacks: Sequence[Any] = ()) -> Any:
    """One network trained with ``config`` (its best validation weights when ``select_best_every``), with
    ``callbacks`` (SB3 callbacks) besides its own."""
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback

    model = build_model(config)
    callbacks = list(callbacks)
    if config.checkpoint_every_steps > 0:
        callbacks.append(CheckpointCallback(config.checkpoint_every_steps, str(checkpoints), "dqn"))
    LOG.info("training DQN (seed %d) for %d steps", config.seed, config.timesteps)
    keeper = _BestKeeper(config) if config.select_best_every > 0 else None
    if keeper is not None:
        callbacks.append(keeper.callback())
    model.learn(total_timesteps=config.timesteps, callback=CallbackList(callbacks) if callbacks else None)
    if keeper is not None:
        keeper.finish(model)
    return model


def _train_member_file(config_json: dict[str, Any], path: str) -> str:
    """Process-pool entry: train one member and save it to ``path`` (no checkpoints)."""
    config = replace(DQNConfig.from_json(config_json), checkpoint_every_steps=0)
    _save_zip(_train_one(config, Path(path).parent), Path(path))
    return path


#: Validation days are training-stream days from this index on (episodes use 0, 1, 2, ...).
VALIDATION_DAY_OFFSET = 2_000_000


class _BestKeeper:
    """Scores the greedy policy periodically on validation days; restores the best weights at the end."""

    def __init__(self, config: DQNConfig) -> None:
        self.config = config
        self.best_score = float("inf")
        self.best_state: dict[str, Any] | None = None
        self.scored_at = -1

    def score(self, model: Any) -> float:
        from wattsched.rl.partitioner import DQNPartitioner

        env = self.config.env
        policy = DQNPartitioner.from_model(model, env.initial_configuration, env)
        return validation_cost(self.config, policy, VALIDATION_DAY_OFFSET, self.config.validation_days)

    def consider(self, model: Any) -> None:
        import copy

        value = self.score(model)
        self.scored_at = model.num_timesteps
        LOG.info("validation score %.4f at step %d", value, model.num_timesteps)
        if value < self.best_score:
            self.best_score = value
            self.best_state = copy.deepcopy(model.policy.state_dict())

    def callback(self) -> Any:
        from stable_baselines3.common.callbacks import BaseCallback

        keeper = self

        class _Select(BaseCallback):
            scored = 0

            def _on_step(self) -> bool:
                # With n_envs > 1 the step count moves by n_envs: score on crossing each multiple.
                due = self.num_timesteps // keeper.config.select_best_every
                if due > self.scored:
                    self.scored = due
                    keeper.consider(self.model)
                return True

        return _Select()

    def finish(self, model: Any) -> None:
        if model.num_timesteps != self.scored_at:  # the last step was not scored yet
            self.consider(model)
        if self.best_state is not None:
            model.policy.load_state_dict(self.best_state)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _save_zip(model: Any, path: Path) -> None:
    tmp = path.with_name(f".{path.stem}.tmp.zip")
    model.save(str(tmp))
    os.replace(tmp, path)


def _save_config(config: DQNConfig, path: Path) -> None:
    """The config sidecar of the model ``path`` (``dqn_model.json`` beside ``dqn_model.zip``), atomically."""
    _atomic_write_text(path.with_suffix(_CONFIG_SUFFIX), json.dumps(config.to_json(), indent=2))


def save_model(model: Any, config: DQNConfig, path: str | Path) -> Path:
    """Save the SB3 model to ``path`` (a ``.zip``) and its config beside it, both atomically."""
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    _save_zip(model, path)
    _save_config(config, path)
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
    """Load a saved DQN (SB3 format; CPU)."""
    from wattsched.rl.algorithm import MaskedDQN

    path = Path(path)
    if not path.is_file():
        raise InputError("no such model file", path=str(path))
    try:
        with warnings.catch_warnings():
            # A model trained with n-step returns saved its replay-buffer class; loading for evaluation
            # never builds that buffer, so SB3's note that n_steps is then ignored does not apply.
            warnings.filterwarnings("ignore", message=".*n_steps.* is ignored", category=UserWarning)
            return MaskedDQN.load(str(path), device="cpu")
    except (ValueError, KeyError, OSError, RuntimeError) as exc:
        raise InputError(
            f"not a stable-baselines3 DQN model ({type(exc).__name__}: {exc})", path=str(path)
        ) from None
