"""Rollout: improve a repartitioning policy by simulating it ahead at each decision (not in P1).

At a decision epoch with jobs present, each candidate configuration is tried on copies of the simulation
that hold only the jobs that have arrived (:meth:`MigSimulation.fork(arrived_only=True)
<wattsched.mig.simulator.MigSimulation.fork>`, reached through ``SimSnapshot.fork_arrived``), to which the
arrivals of ``scenarios`` *sampled* days are added for the next ``window_s`` seconds; on each copy the base
policy then decides every later epoch of the window. The candidate with the lowest mean cost
``a·E_dyn + L / N`` over the window is taken (``E_dyn`` energy above idle in joules, ``L`` lateness accrued in
minutes, ``N`` the expected jobs per day: the DQN reward's and the lookahead's scalarisation); ties go to the
base policy's preference. The sampled days are drawn from the workload spec at ``reset(gpu, seed)`` (the
same profile and load the day's jobs come from), so the plan never sees the day's real future arrivals.

This is policy improvement by rollout (Bertsekas & Tsitsiklis, *Neuro-Dynamic Programming*, 1996, Sec. 6.1;
Tesauro & Galperin, NIPS 1996): with exact costs, the rollout policy is never worse than its base; here the
costs are estimates from few sampled futures over a finite window, so the gain is measured, not guaranteed
(``benchmarks/bench_dqn.py``). With a base that ranks its actions (``ranked(snapshot)``, as the trained
DQN does by Q-value, masked actions left out) only its ``candidates`` best are tried; otherwise its choice
and every other configuration of the GPU.

Cost per decision: ``candidates × scenarios`` simulations of ``window_s``; with the DQN as base, 3
candidates, 2 sampled days and a 30-minute window, a day of the ``paper`` preset (~520 jobs, ~1,000 epochs)
takes about 8 s on one core (1 sampled day: about 4 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import PARTITIONERS, ConfigId, RepartitionPolicy
from wattsched.mig.partition.planning import ET_COEFFICIENT, JOBS_NORM, WINDOW_S, SampledDays, window_cost
from wattsched.mig.partition.runner import drive
from wattsched.mig.results import SimSnapshot
from wattsched.workload.job import Job

__all__ = ["RankedPolicy", "RolloutPartitioner", "RolloutPlan"]

#: Spawn key of the sampled days (the lookahead planner's are ``(7,)``).
_SCENARIO_KEY = 8


class RolloutPlan(NamedTuple):
    """One decision of the rollout: the configuration taken, the candidates tried (the base's preference
    first) and each one's mean window cost (empty where nothing was simulated)."""

    choice: ConfigId
    candidates: tuple[ConfigId, ...]
    costs: tuple[float, ...]


@runtime_checkable
class RankedPolicy(Protocol):
    """A repartitioning policy that can rank the configurations it would choose, best first."""

    def ranked(self, snapshot: SimSnapshot) -> Sequence[ConfigId]: ...


@dataclass
class RolloutPartitioner:
    """``base`` improved by rollouts over sampled arrivals; ``et_coefficient`` is ET's ``a`` per joule (from
    pilot runs, as for the lookahead) and ``jobs_norm`` the expected jobs per day of ``workload`` (defaults:
    the lookahead's, for P1's literal load). The registry's ``rollout`` defaults to Day-Night as its base."""

    base: RepartitionPolicy
    et_coefficient: float = ET_COEFFICIENT
    jobs_norm: float = JOBS_NORM
    #: Sampled days whose arrivals join each rollout (the cost is their mean); 0: only the present jobs.
    scenarios: int = 2
    window_s: float = WINDOW_S
    #: The base's best-ranked configurations tried (a base that cannot rank: every configuration); 0: all.
    candidates: int = 3
    #: Workload spec the sampled days are drawn from (``None``: P1's Fig. 5 profile at multiplier 1).
    workload: Any = None
    name: str = "rollout"
    scheduler: str = field(default="", init=False)
    _gpu: MigGpu | None = field(default=None, repr=False)
    _days: SampledDays = field(default_factory=SampledDays, repr=False)

    def __post_init__(self) -> None:
        if self.scenarios < 0 or self.candidates < 0 or not self.window_s > 0:
            raise ConfigError(
                f"rollout needs scenarios >= 0, candidates >= 0 and window_s > 0, got scenarios="
                f"{self.scenarios}, candidates={self.candidates}, window_s={self.window_s}"
            )
        if self.et_coefficient < 0 or self.jobs_norm <= 0:
            raise ConfigError("rollout needs et_coefficient >= 0 and jobs_norm > 0")
        self.scheduler = self.base.scheduler

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self.base.reset(gpu, seed)
        self._gpu = gpu
        self._days = SampledDays.draw(self.workload, seed, self.scenarios, _SCENARIO_KEY)

    def initial_configuration(self) -> ConfigId:
        return self.base.initial_configuration()

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        return self.plan(snapshot).choice

    def plan(self, snapshot: SimSnapshot) -> RolloutPlan:
        """The candidates tried at this epoch, their mean window costs and the choice (what :meth:`decide`
        returns). Without jobs, or with one candidate, nothing is simulated and ``costs`` is empty."""
        if self._gpu is None:
            raise RuntimeError("call reset(gpu) before decide()")
        if not snapshot.jobs:
            return RolloutPlan(self.base.decide(snapshot), (), ())
        candidates = self._candidates(snapshot)
        if len(candidates) == 1:
            return RolloutPlan(candidates[0], tuple(candidates), ())
        if snapshot.fork_arrived is None:
            raise ConfigError("the rollout policy needs snapshots of a simulation (SimSnapshot.fork_arrived)")
        now_s = float(snapshot.now_s)
        extras = self._days.arrivals(now_s, self.window_s)
        costs = [
            sum(self._cost(snapshot, candidate, extra, now_s) for extra in extras) / len(extras)
            for candidate in candidates
        ]
        best = 0
        for index, cost in enumerate(costs):
            if cost < costs[best]:  # strict: ties keep the base's preference
                best = index
        return RolloutPlan(candidates[best], tuple(candidates), tuple(costs))

    def _candidates(self, snapshot: SimSnapshot) -> list[ConfigId]:
        if isinstance(self.base, RankedPolicy):
            ranked = list(self.base.ranked(snapshot))
            return ranked[: self.candidates] if self.candidates else ranked
        assert self._gpu is not None
        first = self.base.decide(snapshot)
        return [first, *(c for c in self._gpu.configuration_ids if c != first)]

    def _cost(self, snapshot: SimSnapshot, candidate: ConfigId, extra: list[Job], now_s: float) -> float:
        assert snapshot.fork_arrived is not None and self._gpu is not None
        sim = snapshot.fork_arrived()
        for job in extra:
            sim.add_job(job)
        energy0, late0 = sim.energy_j, sim.accrued_tardiness_s
        sim.repartition(candidate)
        drive(sim, self.base, now_s + self.window_s)
        dynamic_j = sim.energy_j - energy0 - self._gpu.power.idle_w * (sim.now_s - now_s)
        return window_cost(self.et_coefficient, self.jobs_norm, dynamic_j, sim.accrued_tardiness_s - late0)


@PARTITIONERS.register("rollout", options_of=RolloutPartitioner)
def _make_rollout(base: RepartitionPolicy | str = "day-night", **options: Any) -> RolloutPartitioner:
    policy = PARTITIONERS.make(base) if isinstance(base, str) else base
    return RolloutPartitioner(policy, **options)
