"""Drive a simulation under a repartitioning policy, and run one day that way, logging every decision
(Fig. 11, repartitions per hour).

:func:`drive` is the one loop every caller uses — the day runner, the rollout's simulated windows, the
gymnasium environment: advance the simulation to its next decision epoch (a job arrival or completion outside
a blackout), show the policy a snapshot and apply its choice with ``MigSimulation.repartition``
(:func:`decide_epoch`). A cluster, which steps each GPU instant by instant in one global time order, applies
:func:`decide_epoch` at each GPU's epochs.
Day seeds live here too, so that every caller (study, CLI, benchmark, environment) draws the same held-out
days.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import ConfigId, RepartitionPolicy
from wattsched.mig.results import SimResult, SimSnapshot, warn_unfinished
from wattsched.mig.simulator import MigSimulation, RepartitionMode
from wattsched.workload.job import Job

__all__ = [
    "DayRun",
    "Decider",
    "Decision",
    "configuration_time_s",
    "decide_epoch",
    "drive",
    "held_out_day",
    "repartitions_per_hour",
    "run_day",
    "training_day",
]

_TRAINING_STREAM = 0
_HELD_OUT_STREAM = 1


def training_day(seed: int, index: int) -> np.random.SeedSequence:
    """Seed of training day ``index`` (DQN episodes, static selection, pilot runs)."""
    return np.random.SeedSequence(seed, spawn_key=(_TRAINING_STREAM, index))


def held_out_day(seed: int, index: int) -> np.random.SeedSequence:
    """Seed of held-out evaluation day ``index``; disjoint from every training day of any index."""
    return np.random.SeedSequence(seed, spawn_key=(_HELD_OUT_STREAM, index))


@dataclass(frozen=True)
class Decision:
    """One decision epoch: the configuration in force after it and whether it started a repartition."""

    time_s: float
    configuration: ConfigId
    repartitioned: bool


@dataclass(frozen=True)
class DayRun:
    """The simulator's result for the day plus the decision log."""

    result: SimResult
    initial_configuration: ConfigId
    decisions: tuple[Decision, ...]

    @property
    def repartition_times_s(self) -> tuple[float, ...]:
        return tuple(d.time_s for d in self.decisions if d.repartitioned)


def run_day(
    jobs: Sequence[Job],
    partitioner: RepartitionPolicy,
    *,
    horizon_s: float | None,
    gpu: MigGpu | str | None = None,
    repartition_mode: RepartitionMode = "blackout",
    seed: int | None = None,
    power_curve: str | None = None,
    power_cap: bool = False,
    record_jobs: bool = False,
) -> DayRun:
    """Simulate ``jobs`` on ``gpu`` (default the A100-40GB) with ``partitioner`` choosing the configuration at
    every decision epoch."""
    resolved = load_gpu(gpu)
    partitioner.reset(resolved, seed)
    initial = partitioner.initial_configuration()
    sim = MigSimulation(
        list(jobs),
        initial,
        partitioner.scheduler,
        gpu=resolved,
        power_curve=power_curve,
        power_cap=power_cap,
        record_jobs=record_jobs,
        horizon_s=horizon_s,
        repartition_mode=repartition_mode,
    )
    decisions: list[Decision] = []
    drive(sim, partitioner, log=decisions)
    result = sim.result()
    warn_unfinished(result.unfinished_jobs, result.jobs, f"the day under '{partitioner.name}'")
    return DayRun(result, initial, tuple(decisions))


class Decider(Protocol):
    """What :func:`drive` asks at each decision epoch: a :class:`RepartitionPolicy`, or anything that chooses
    a configuration from a snapshot (``None``: stop here and hand the epoch back to the caller)."""

    def decide(self, snapshot: SimSnapshot) -> ConfigId | None: ...


def decide_epoch(sim: MigSimulation, decider: Decider, log: list[Decision] | None = None) -> bool:
    """At a decision epoch of ``sim``: ``decider``'s choice for the snapshot, applied (and appended to
    ``log``). Returns ``False`` when the decider chose nothing (``None``), else ``True``."""
    snapshot = sim.snapshot()
    choice = decider.decide(snapshot)
    if choice is None:
        return False
    changed = bool(sim.repartition(choice))
    if log is not None:
        log.append(Decision(float(snapshot.now_s), choice if changed else snapshot.configuration, changed))
    return True


def drive(
    sim: MigSimulation, decider: Decider, until_s: float = math.inf, *, log: list[Decision] | None = None
) -> bool:
    """Run ``sim`` epoch by epoch, ``decider`` choosing the configuration at each decision epoch
    (:func:`decide_epoch`), until the run ends, an epoch at or after ``until_s`` is reached (left
    undecided), or the decider hands an epoch back (``None``). Returns whether the simulation is still
    running."""
    while sim.advance():
        if sim.now_s >= until_s or not decide_epoch(sim, decider, log):
            return True
    return False


def repartitions_per_hour(run: DayRun, hours: int = 24) -> np.ndarray:
    """Number of repartitions started in each hour of the day (times past ``hours`` wrap around)."""
    counts = np.zeros(hours, dtype=np.int64)
    for time_s in run.repartition_times_s:
        counts[int(time_s // 3600.0) % hours] += 1
    return counts


def configuration_time_s(
    run: DayRun,
    configurations: Sequence[ConfigId],
    *,
    interval_s: float = 4 * 3600.0,
    day_s: float = 86_400.0,
) -> np.ndarray:
    """Seconds spent in each configuration per interval of ``[0, day_s)``: shape (intervals, configurations).

    A configuration counts from the decision that chose it (its blackout included) until the next change.
    """
    intervals = int(np.ceil(day_s / interval_s))
    table = np.zeros((intervals, len(configurations)), dtype=np.float64)
    column = {c: i for i, c in enumerate(configurations)}
    changes = [(0.0, run.initial_configuration)] + [
        (d.time_s, d.configuration) for d in run.decisions if d.repartitioned
    ]
    for (start_s, config), (end_s, _) in zip(changes, [*changes[1:], (day_s, None)], strict=True):
        start_s, end_s = min(start_s, day_s), min(end_s, day_s)
        if config not in column or end_s <= start_s:
            continue
        first, last = int(start_s // interval_s), int(min(end_s, day_s - 1e-9) // interval_s)
        for block in range(first, last + 1):
            low, high = max(start_s, block * interval_s), min(end_s, (block + 1) * interval_s)
            table[block, column[config]] += max(high - low, 0.0)
    return table
