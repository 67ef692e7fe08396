"""Lookahead: a training-free repartitioning planner of our own (not in P1).

At each decision epoch it simulates the jobs now in the system forward, once per candidate configuration,
with the
same simulator and in-configuration scheduler as the real run, and picks the candidate with the lowest
ET-style
cost ``a·E_dyn + L / N`` (``E_dyn`` energy above idle in joules, ``L`` total tardiness in minutes, ``N`` the
expected jobs per day; the same scalarisation as the DQN reward). A candidate other than the
current configuration starts after the repartition blackout (the GPU's ``repartition_s``, 4 s on the A100, or
the ``repartition_s`` option: on a live node, the seconds its changes were measured to take), so the penalty
is counted where it bites: the delay of every job. Idle power is left out because over a common window it is
the same for every candidate.

The plan never sees the day's future jobs. Optionally it adds *sampled* arrivals: ``sampled_days`` extra days
drawn from the workload spec at ``reset(seed)``, whose jobs arriving within ``window_s`` after now join the
plan;
the cost is then averaged over those scenarios (common to all candidates).

Cost is bounded by planning only the ``max_jobs`` earliest-deadline jobs and the ``candidates`` given.
Planning jobs start together at ``now`` with durations scaled by their remaining fraction; running jobs are
re-placed by the scheduler in the plan, an approximation of restricted EDF-SS's "running jobs keep their
slice".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import PARTITIONERS, ConfigId
from wattsched.mig.partition.planning import ET_COEFFICIENT, JOBS_NORM, WINDOW_S, SampledDays, window_cost
from wattsched.mig.results import JobView, SimSnapshot
from wattsched.mig.simulator import simulate
from wattsched.workload.job import Job, JobKind, Scaling

__all__ = ["LookaheadPartitioner"]

#: Spawn key of the sampled days (the rollout's are ``(8,)``).
_SCENARIO_KEY = 7


@dataclass
class LookaheadPartitioner:
    """Simulate-and-compare planner; ``et_coefficient`` is ET's ``a`` per joule (from pilot runs)."""

    et_coefficient: float = ET_COEFFICIENT
    jobs_norm: float = JOBS_NORM
    #: Configurations to compare; ``None``: every MIG configuration of the GPU.
    candidates: tuple[ConfigId, ...] | None = None
    max_jobs: int = 10
    sampled_days: int = 0
    window_s: float = WINDOW_S
    switch_margin: float = 0.0
    #: Seconds a change delays every planned job; ``None``: the GPU's ``repartition_s``.
    repartition_s: float | None = None
    #: Configuration at t = 0; ``None``: the GPU's "initial" role.
    initial: ConfigId | None = None
    workload: Any = None  # WorkloadSpec for sampled arrivals; None: the alibaba-day profile
    scheduler: str = "edf-ss-restricted"
    name: str = "lookahead"
    _scenarios: SampledDays = field(default_factory=SampledDays, repr=False)
    _gpu: MigGpu | None = field(default=None, repr=False)
    _candidates: tuple[ConfigId, ...] = field(default=(), repr=False)
    _initial: ConfigId | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.candidates is not None and not self.candidates:
            raise ConfigError("lookahead needs at least one candidate configuration")
        if self.max_jobs < 1 or self.sampled_days < 0 or self.window_s < 0 or self.switch_margin < 0:
            raise ConfigError(
                "lookahead needs max_jobs >= 1, sampled_days >= 0, window_s >= 0, switch_margin >= 0"
            )
        if self.repartition_s is not None and not self.repartition_s >= 0:
            raise ConfigError(f"lookahead needs repartition_s >= 0, got {self.repartition_s!r}")
        if self.et_coefficient < 0 or self.jobs_norm <= 0:
            raise ConfigError("lookahead needs et_coefficient >= 0 and jobs_norm > 0")

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self._gpu = gpu
        candidates = self.candidates if self.candidates is not None else gpu.configuration_ids
        # ConfigError for an id the GPU does not have:
        self._candidates = tuple(gpu.configuration(c).ident for c in candidates)
        initial = self.initial if self.initial is not None else gpu.role("initial")
        self._initial = gpu.configuration(initial).ident
        self._scenarios = SampledDays.draw(self.workload, seed, self.sampled_days, _SCENARIO_KEY)

    def initial_configuration(self) -> ConfigId:
        if self._initial is None:
            raise RuntimeError("call reset(gpu) before initial_configuration()")
        return self._initial

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        current = snapshot.configuration
        now_s = float(snapshot.now_s)
        ranked = sorted(snapshot.jobs, key=lambda j: (j.deadline_s, j.arrival_s))[: self.max_jobs]
        if not ranked:
            return current
        assert self._gpu is not None
        sizes = self._gpu.compute_sizes
        base = [_planning_job(j, index, now_s, sizes) for index, j in enumerate(ranked)]
        scenarios = self._scenarios.arrivals(now_s, self.window_s)
        costs = {c: self._cost(base, scenarios, c, c != current, now_s) for c in self._candidates}
        best = min(costs, key=lambda c: (costs[c], c != current, c))
        if current in costs and costs[current] - costs[best] <= self.switch_margin * abs(costs[current]):
            return current
        return best

    def _cost(
        self, base: list[Job], scenarios: Sequence[list[Job]], config: ConfigId, switch: bool, now_s: float
    ) -> float:
        gpu = self._gpu
        assert gpu is not None
        idle_w = gpu.power.idle_w
        blackout_s = gpu.repartition_s if self.repartition_s is None else self.repartition_s
        delay_s = blackout_s if switch else 0.0
        total = 0.0
        for extra in scenarios:
            ready_s = now_s + delay_s
            jobs = [_arriving_at(j, max(j.arrival_s, ready_s)) for j in (*base, *extra)]
            result = simulate(jobs, config, self.scheduler, gpu=gpu, horizon_s=now_s)
            dynamic_j = result.energy_j - idle_w * result.end_s
            lateness_s = result.avg_tardiness_s * result.jobs
            total += window_cost(self.et_coefficient, self.jobs_norm, dynamic_j, lateness_s)
        return total / len(scenarios)


def _planning_job(view: JobView, index: int, now_s: float, sizes: tuple[int, ...]) -> Job:
    """A job of the plan: what is left of ``view``'s work, arriving now (``sizes``: the GPU's)."""
    fraction = float(view.remaining_fraction)
    durations = tuple(max(fraction * d, 1e-9) for d in view.durations_s)
    return Job(
        f"p{index:04d}",
        now_s,
        float(view.deadline_s),
        view.kind or JobKind.INFERENCE,
        view.scaling or Scaling.MEASURED,
        durations[:-1],
        durations[-1],
        sizes,
    )


def _arriving_at(job: Job, arrival_s: float) -> Job:
    if arrival_s == job.arrival_s:
        return job
    return Job(
        job.job_id,
        arrival_s,
        job.deadline_s,
        job.kind,
        job.scaling,
        job.durations_s,
        job.dur_full_s,
        job.sizes,
    )


@PARTITIONERS.register("lookahead", options_of=LookaheadPartitioner)
def _make_lookahead(**options: Any) -> LookaheadPartitioner:
    return LookaheadPartitioner(**options)
