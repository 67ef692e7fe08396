"""``wattsched/MigRepartition-v0``: a thin gymnasium adapter over
:class:`wattsched.mig.simulator.MigSimulation`.

One episode is one generated day (P1 Fig. 5 profile by default). Each step applies the chosen configuration
(action k = configuration k + 1) at the current decision epoch, runs the simulator to the next epoch, and
returns
the §A.6.1 observation and the §A.6.3 reward for the interval between the two epochs.

Days: ``reset(seed=s)`` restarts the stream of training days at day 0 of seed ``s``; each later ``reset()``
takes the next day, so one seed gives one repeatable sequence of episodes. Training day k of seed s is
``SeedSequence(s, spawn_key=(0, k))``, disjoint from the held-out days ``(1, k)`` of
:func:`wattsched.mig.partition.runner.held_out_day`. ``options={"jobs": [...]}`` runs a given job list
instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.mig.partition.runner import training_day
from wattsched.mig.simulator import RepartitionMode
from wattsched.rl import ENV_ID, register_envs
from wattsched.rl.observation import ObservationSpec, snapshot_observation
from wattsched.rl.reward import RewardSpec, step_reward
from wattsched.workload.generators import WorkloadSpec, generate_jobs

__all__ = ["ENV_ID", "EnvConfig", "MigRepartitionEnv"]


@dataclass(frozen=True)
class EnvConfig:
    """Workload, reward and simulator options of the environment (defaults: papers.md §A.3.1, §A.6)."""

    profile: str = "alibaba-day"
    rate_multiplier: float = 1.0
    hours: float = 24.0
    inference_share: float = 0.8
    #: ET's ``a`` per joule; the Table III study sets it from pilot runs of the benchmark methods.
    et_coefficient: float = 3.5e-8
    #: Lateness normaliser (expected jobs per day); ``None``: the profile's expected count.
    jobs_norm: float | None = None
    reward_scale: float = 100.0
    #: The GPU (catalogue name or path); its configurations are the actions.
    gpu: str = "a100-40gb"
    #: Configuration at the start of each day; ``None``: the GPU's "initial" role.
    initial_configuration: int | str | None = None
    scheduler: str = "edf-ss-restricted"
    repartition_mode: RepartitionMode = "blackout"
    #: Power selection and power-cap option of the simulator (see :func:`wattsched.mig.simulate`).
    power_curve: str | None = None
    power_cap: bool = False

    def workload(self) -> WorkloadSpec:
        return WorkloadSpec(
            profile=self.profile,
            hours=self.hours,
            inference_share=self.inference_share,
            rate_multiplier=self.rate_multiplier,
        )

    def reward_spec(self) -> RewardSpec:
        norm = self.jobs_norm
        if norm is None:
            from wattsched.workload.arrivals import PROFILES

            norm = PROFILES.make(self.profile).expected_count(self.workload().horizon_s, self.rate_multiplier)
        return RewardSpec(self.et_coefficient, max(norm, 1.0), self.reward_scale)


class MigRepartitionEnv(gym.Env[np.ndarray, np.int64]):
    """Choose one of the GPU's MIG configurations (12 on P1's A100-40GB) at every job arrival and
    completion."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium convention)

    def __init__(self, config: EnvConfig | None = None, **overrides: Any) -> None:
        base = config or EnvConfig()
        self.config = EnvConfig(**{**base.__dict__, **overrides}) if overrides else base
        self._gpu = load_gpu(self.config.gpu)
        self._spec = ObservationSpec.for_gpu(self._gpu)
        self._actions = self._spec.configurations
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
        self._energy_j = 0.0
        self._lateness_s = 0.0
        self._last_obs = np.zeros(self._spec.size, dtype=np.float32)

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
        from wattsched.mig.simulator import MigSimulation

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
        self._energy_j = self._lateness_s = 0.0
        self._sim.advance()
        self._last_obs = self._observe()
        return self._last_obs, {"jobs": len(jobs)}

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._sim is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(np.int64(action)):
            raise ValueError(f"action must be 0..{len(self._actions) - 1}, got {action!r}")
        changed = self._sim.repartition(self._actions[int(action)])
        running = self._sim.advance()
        if running:
            snapshot = self._sim.snapshot()
            energy_j, lateness_s = float(snapshot.energy_j), float(snapshot.accrued_tardiness_s)
            self._last_obs = self._observe(snapshot)
        else:
            result = self._sim.result()
            energy_j, lateness_s = result.energy_j, result.avg_tardiness_s * result.jobs
        reward = step_reward(energy_j - self._energy_j, lateness_s - self._lateness_s, self._reward)
        self._energy_j, self._lateness_s = energy_j, lateness_s
        info: dict[str, Any] = {"repartitioned": bool(changed), "time_s": float(self._sim.now_s)}
        if not running:
            info["result"] = self._sim.result()
        return self._last_obs, reward, not running, False, info

    def _observe(self, snapshot: Any = None) -> np.ndarray:
        return snapshot_observation(snapshot if snapshot is not None else self._sim.snapshot(), self._spec)


# Gymnasium convention: importing the module that defines an environment registers it, so that
# ``gym.make("wattsched.rl.env:wattsched/MigRepartition-v0")`` works without a prior call (gymnasium 1.x no
# longer loads ``gymnasium.envs`` entry points by itself). Registration is idempotent.
register_envs()
