"""The environment's configuration, apart from gymnasium so that a trained policy can be rebuilt without it.

:class:`EnvConfig` is saved beside every model (``dqn_model.json``) and read back by
:class:`~wattsched.rl.partitioner.DQNPartitioner`, so evaluation observes, masks and maps actions exactly as
training did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import DEFAULT_GPU, load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.mig.simulator import RepartitionMode
from wattsched.rl.masking import balanced_configurations
from wattsched.rl.observation import ObservationSpec
from wattsched.rl.reward import RewardSpec
from wattsched.workload.generators import WorkloadSpec

__all__ = ["EnvConfig"]

ConfigId = int | str


@dataclass(frozen=True)
class EnvConfig:
    """Workload, observation, action and reward options of the environment.

    Workload: P1's Fig. 5 profile; ``rate_multiplier`` 1 is the ``literal`` preset, 2.5 the ``paper`` preset
    (docs/concepts/presets.md). Reward (:mod:`wattsched.rl.reward`): ``et_coefficient`` is ET's ``a`` per
    joule (set it from pilot runs at the same load), ``jobs_norm`` the lateness normaliser (``None``: the
    profile's expected jobs per day at ``rate_multiplier``, 207 at 1 and 516 at 2.5), ``switch_penalty_s``
    seconds of lateness charged per repartition (0: P1's reward). Observation
    (:mod:`wattsched.rl.observation`): P1's state plus the queue blocks ``count_bins``, ``training_bins``,
    ``waiting_bins``, ``slice_busy`` and the ``arrival_forecast`` input (all off: exactly P1's state).
    Actions: the GPU's configurations (``actions=None``), the listed subset, or with ``balanced_actions`` the
    most even configuration per number of slices;
    ``mask_idle_slices`` masks every configuration that has more slices than there are unfinished jobs
    (never the current one), see :mod:`wattsched.rl.masking`; ``skip_forced`` lets the environment take the
    epochs where it allows a single action (:mod:`wattsched.rl.env`).

    The defaults are P1's environment (the literal load, P1's state and reward, no mask); the tuned setting
    for the paper preset is :func:`wattsched.rl.dqn.paper_config`.
    """

    profile: str = "alibaba-day"
    rate_multiplier: float = 1.0
    hours: float = 24.0
    inference_share: float = 0.8
    #: ET's ``a`` per joule; the Table III study sets it from pilot runs of the benchmark methods.
    et_coefficient: float = 3.5e-8
    #: Lateness normaliser (expected jobs per day); ``None``: the profile's expected count.
    jobs_norm: float | None = None
    reward_scale: float = 100.0
    #: Seconds of lateness charged per repartition in the reward (shaping; not part of ET).
    switch_penalty_s: float = 0.0
    #: The GPU (catalogue name or path); its configurations are the actions.
    gpu: str = DEFAULT_GPU
    #: Configuration at the start of each day; ``None``: the GPU's "initial" role.
    initial_configuration: int | str | None = None
    scheduler: str = "edf-ss-restricted"
    repartition_mode: RepartitionMode = "blackout"
    #: Power selection and power-cap option of the simulator (see :func:`wattsched.mig.simulate`).
    power_curve: str | None = None
    power_cap: bool = False
    #: P1's blocks of the observation: the hour of day, and the first ``jobs_observed`` jobs by deadline.
    hour_block: bool = True
    jobs_observed: int = 3
    #: Queue blocks of the observation (0 / False: off).
    count_bins: int = 0
    training_bins: int = 0
    waiting_bins: int = 0
    slice_busy: bool = False
    #: Arrival-forecast input: expected arrivals in the next hour from the workload's day profile.
    arrival_forecast: bool = False
    #: Configurations the agent may choose (``None``: all of the GPU's, in its order) ...
    actions: tuple[ConfigId, ...] | None = None
    #: ... or, when True, the most even configuration per number of slices (``balanced_configurations``).
    balanced_actions: bool = False
    #: Mask configurations with more slices than unfinished jobs (staying is always allowed).
    mask_idle_slices: bool = False
    #: Let the environment take epochs where the mask allows one action (fewer, informative agent steps).
    skip_forced: bool = False
    #: Potential-based shaping (:mod:`wattsched.rl.shaping`) with this discount, which must be the agent's γ;
    #: ``None``: no shaping.
    shaping_gamma: float | None = None

    def __post_init__(self) -> None:
        if self.actions is not None:
            if not self.actions:
                raise ConfigError("actions must list at least one configuration (or be None for all)")
            object.__setattr__(self, "actions", tuple(self.actions))
        if self.balanced_actions and self.actions is not None:
            raise ConfigError("give either actions or balanced_actions, not both")
        if self.shaping_gamma is not None and not 0.0 < self.shaping_gamma <= 1.0:
            raise ConfigError(f"shaping_gamma must be in (0, 1], got {self.shaping_gamma}")
        if self.switch_penalty_s < 0:
            raise ConfigError(f"switch_penalty_s must be >= 0, got {self.switch_penalty_s}")
        if self.mask_idle_slices and not self.count_bins:
            raise ConfigError("mask_idle_slices needs count_bins > 0 (the mask reads the job count)")
        if self.skip_forced and not self.mask_idle_slices:
            raise ConfigError("skip_forced needs mask_idle_slices (forced epochs are the mask's)")

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
        return RewardSpec(self.et_coefficient, max(norm, 1.0), self.reward_scale, self.switch_penalty_s)

    def observation_spec(self, gpu: MigGpu | str | None = None) -> ObservationSpec:
        """The observation spec on ``gpu`` (default: this config's GPU)."""
        return ObservationSpec.for_gpu(
            gpu if gpu is not None else self.gpu,
            n_hours=24 if self.hour_block else 0,
            jobs_observed=self.jobs_observed,
            count_bins=self.count_bins,
            training_bins=self.training_bins,
            waiting_bins=self.waiting_bins,
            slice_busy=self.slice_busy,
            hourly_arrivals=self.hourly_arrivals() if self.arrival_forecast else (),
        )

    def hourly_arrivals(self) -> tuple[float, ...]:
        """Expected arrivals in each hour of the day (24 counts): the profile's rate in jobs/min x 60 x
        ``rate_multiplier`` (what the workload generator draws from)."""
        from wattsched.workload.arrivals import PROFILES

        rates = PROFILES.make(self.profile).rates_per_min
        return tuple(r * 60.0 * self.rate_multiplier for r in rates)

    def action_ids(self, gpu: MigGpu | str | None = None) -> tuple[ConfigId, ...]:
        """The configuration of each action on ``gpu`` (ConfigError for an id the GPU does not have)."""
        resolved = load_gpu(gpu if gpu is not None else self.gpu)
        if self.balanced_actions:
            return balanced_configurations(resolved)
        chosen = self.actions if self.actions is not None else resolved.configuration_ids
        return tuple(resolved.configuration(c).ident for c in chosen)

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        data = asdict(self)
        if self.actions is not None:
            data["actions"] = list(self.actions)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EnvConfig:
        data = dict(data)
        if data.get("actions") is not None:
            data["actions"] = tuple(data["actions"])
        return cls(**data)
