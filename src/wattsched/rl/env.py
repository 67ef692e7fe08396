"""``wattsched/MigRepartition-v0``: a thin gymnasium adapter over
:class:`wattsched.mig.simulator.MigSimulation`.

One episode is one generated day (P1 Fig. 5 profile by default). Each step applies the chosen configuration
(action k = ``config.action_ids()[k]``: configuration k + 1 with every configuration of P1's GPU) at the
current decision epoch, runs the simulator to the next epoch, and returns the observation
(:mod:`wattsched.rl.observation`) and the reward (:mod:`wattsched.rl.reward`) for the interval between the
two epochs.

With ``skip_forced`` (needs the action mask), an epoch at which the mask allows a single action is decided by
the environment: the step runs on to the next epoch with a real choice, and its reward covers every epoch in
between (a semi-MDP step; the trained policy would have taken the same single action). Those epochs carry no
information for learning, and at the paper preset they are about 40 % of all epochs.

With ``shaping_gamma`` set, the reward adds the potential-based shaping term of :mod:`wattsched.rl.shaping`
(``γ·Φ(s') - Φ(s)``, with the agent's discount ``γ``).

Days: ``reset(seed=s)`` restarts the stream of training days at day 0 of seed ``s``; each later ``reset()``
takes the next day, so one seed gives one repeatable sequence of episodes. Training day k of seed s is
``SeedSequence(s, spawn_key=(0, k))``, disjoint from the held-out days ``(1, k)`` of
:func:`wattsched.mig.partition.runner.held_out_day`. ``options={"jobs": [...]}`` runs a given job list
instead.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.mig.partition.runner import Decision, drive, training_day
from wattsched.mig.results import SimSnapshot
from wattsched.mig.simulator import MigSimulation
from wattsched.rl import ENV_ID, register_envs
from wattsched.rl.config import EnvConfig
from wattsched.rl.masking import ActionMask
from wattsched.rl.observation import snapshot_observation
from wattsched.rl.reward import step_reward
from wattsched.rl.shaping import potential
from wattsched.workload.generators import generate_jobs

__all__ = ["ENV_ID", "EnvConfig", "MigRepartitionEnv"]


class MigRepartitionEnv(gym.Env[np.ndarray, np.int64]):
    """Choose one of the GPU's MIG configurations (12 on P1's A100-40GB) at every job arrival and
    completion."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium convention)

    def __init__(self, config: EnvConfig | None = None, **overrides: Any) -> None:
        base = config or EnvConfig()
        self.config = replace(base, **overrides) if overrides else base
        self._gpu = load_gpu(self.config.gpu)
        self._spec = self.config.observation_spec(self._gpu)
        self._actions = self.config.action_ids(self._gpu)
        initial = self.config.initial_configuration
        self._initial = self._gpu.configuration(
            initial if initial is not None else self._gpu.role("initial")
        ).ident
        self._reward = self.config.reward_spec()
        self._workload = self.config.workload()
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(self._spec.size,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(len(self._actions))
        self._seed = 0
        self._day = 0
        self._sim: Any = None
        self._snapshot: Any = None
        self._potential = 0.0
        self._energy_j = 0.0
        self._lateness_s = 0.0
        self._last_obs = np.zeros(self._spec.size, dtype=np.float32)
        self._mask: ActionMask | None = None
        if self.config.mask_idle_slices:
            self._mask = ActionMask.idle_slices(self._gpu, self._spec, self._actions)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._seed, self._day = int(seed), 0
        options = options or {}
        jobs = options.get("jobs")
        if jobs is None:
            jobs = generate_jobs(self._workload, training_day(self._seed, self._day))
            self._day += 1
        self._sim = MigSimulation(
            list(jobs),
            self._initial,
            self.config.scheduler,
            gpu=self._gpu,
            horizon_s=self._workload.horizon_s,
            repartition_mode=self.config.repartition_mode,
            power_curve=self.config.power_curve,
            power_cap=self.config.power_cap,
        )
        # Costs of epochs skipped here are charged to the first step (its reward is taken from the totals).
        self._energy_j = self._lateness_s = 0.0
        running, _, _ = self._advance()
        self._potential = self._potential_now() if running and self.config.shaping_gamma is not None else 0.0
        return self._last_obs, {"jobs": len(jobs)}

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._sim is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(np.int64(action)):
            raise ValueError(f"action must be 0..{len(self._actions) - 1}, got {action!r}")
        repartitions = int(bool(self._sim.repartition(self._actions[int(action)])))
        running, skipped, forced_repartitions = self._advance()
        repartitions += forced_repartitions
        if running:
            snapshot = self._snapshot
            energy_j, lateness_s = float(snapshot.energy_j), float(snapshot.accrued_tardiness_s)
        else:
            result = self._sim.result()
            energy_j, lateness_s = result.energy_j, result.avg_tardiness_s * result.jobs
        reward = step_reward(
            energy_j - self._energy_j, lateness_s - self._lateness_s, self._reward, repartitions
        )
        self._energy_j, self._lateness_s = energy_j, lateness_s
        gamma = self.config.shaping_gamma
        if gamma is not None:
            following = self._potential_now() if running else 0.0
            reward += gamma * following - self._potential
            self._potential = following
        info: dict[str, Any] = {
            "repartitioned": repartitions > 0,
            "repartitions": repartitions,
            "epochs": 1 + skipped,
            "time_s": float(self._sim.now_s),
        }
        if not running:
            info["result"] = self._sim.result()
        return self._last_obs, reward, not running, False, info

    def _advance(self) -> tuple[bool, int, int]:
        """Run to the next epoch the agent decides (with ``skip_forced``, epochs with one allowed action are
        decided here); sets the observation. Returns (running, epochs skipped, repartitions they started)."""
        forced: list[Decision] = []
        running = drive(self._sim, self, log=forced)
        return running, len(forced), sum(d.repartitioned for d in forced)

    def decide(self, snapshot: SimSnapshot) -> int | str | None:
        """At an epoch :func:`drive` reached: observe it; the configuration when the mask allows a single
        action and ``skip_forced`` is set, else ``None`` (the agent decides, at the next :meth:`step`)."""
        self._snapshot = snapshot
        self._last_obs = snapshot_observation(snapshot, self._spec)
        if self._mask is None or not self.config.skip_forced:
            return None
        allowed = np.flatnonzero(self._mask.of(self._last_obs))
        return self._actions[int(allowed[0])] if len(allowed) == 1 else None

    def _potential_now(self) -> float:
        config = self.config
        return potential(
            self._snapshot,
            self._gpu,
            config.scheduler,
            self._reward,
            power_curve=config.power_curve,
            power_cap=config.power_cap,
        )


# Gymnasium convention: importing the module that defines an environment registers it, so that
# ``gym.make("wattsched.rl.env:wattsched/MigRepartition-v0")`` works without a prior call (gymnasium 1.x no
# longer loads ``gymnasium.envs`` entry points by itself). Registration is idempotent.
register_envs()
