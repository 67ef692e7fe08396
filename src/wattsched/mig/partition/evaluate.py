"""Evaluate repartitioning policies on common days and score them with ET (the mechanics of Table III).

* **Day streams** — one seed scheme for every day any caller draws: ``day_seed(seed, stream, index)``.
  Held-out days are :func:`~wattsched.mig.partition.runner.held_out_day`; training, pilot, static-selection
  and validation days are disjoint ranges of the training stream
  (:func:`~wattsched.mig.partition.runner.training_day`), so the DQN's episodes never touch them.
* **A typed day result** — :class:`DayResult`: the run's metrics plus two array columns, repartitions per hour
  of day (24) and seconds in each configuration per 4-hour interval (6 × configurations, P1 Fig. 11).
* **The pilot ET coefficient** — ``a`` pooled over pilot runs of the benchmark methods, and P1's static
  selection (the configuration with the lowest ET on selection days).

:mod:`wattsched.experiments.protocol` builds the typed method specs and the studies on top of this module.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import RepartitionPolicy
from wattsched.mig.partition.day_night import DayNightPartitioner
from wattsched.mig.partition.fixed import NoMigPartitioner, StaticPartitioner
from wattsched.mig.partition.runner import (
    DayRun,
    configuration_time_s,
    held_out_day,
    repartitions_per_hour,
    run_day,
    training_day,
)
from wattsched.workload.generators import WorkloadSpec, generate_jobs

if TYPE_CHECKING:
    from wattsched.mig.simulator import RepartitionMode

__all__ = [
    "FIG11_INTERVALS",
    "PILOT_DAY_OFFSET",
    "DayResult",
    "DayStream",
    "day_row",
    "day_seed",
    "et_by_method",
    "evaluate_days",
    "evaluate_policy",
    "pilot_et_coefficient",
    "select_static",
]

FIG11_INTERVALS = 6
#: Pilot days are training days from this index on (the DQN trains on days 0, 1, ... of its own seed; the
#: offset keeps the pilot days out of its first million episodes).
PILOT_DAY_OFFSET = 1_000_000


class DayStream(enum.Enum):
    """The independent day sequences of one seed."""

    TRAINING = "training"  # DQN episodes (wattsched.rl.env)
    HELD_OUT = "held-out"  # evaluation days, the same for every method
    PILOT = "pilot"  # ET coefficient from the benchmark methods
    SELECTION = "selection"  # P1's static choice (best configuration by ET)
    VALIDATION = "validation"  # the DQN's best-weights check (wattsched.rl.dqn)


#: First training-stream index of each stream drawn from the training stream.
_TRAINING_OFFSETS = {
    DayStream.TRAINING: 0,
    DayStream.PILOT: PILOT_DAY_OFFSET,
    DayStream.SELECTION: PILOT_DAY_OFFSET + 1_000,
    DayStream.VALIDATION: 2_000_000,
}


def day_seed(seed: int, stream: DayStream, index: int) -> np.random.SeedSequence:
    """The seed of day ``index`` of ``stream`` under the study seed ``seed`` (pure, stable across runs)."""
    if index < 0:
        raise ValueError(f"day index must be >= 0, got {index}")
    if stream is DayStream.HELD_OUT:
        return held_out_day(seed, index)
    return training_day(seed, _TRAINING_OFFSETS[stream] + index)


@dataclass(frozen=True, eq=False)
class DayResult:
    """One method on one day. Energy in J, times in s; the two arrays are Fig. 11 and the per-hour counts."""

    method: str
    day: int
    energy_j: float
    avg_tardiness_s: float
    max_tardiness_s: float
    jobs: int
    late_jobs: int
    preemptions: int
    repartitions: int
    decisions: int
    end_s: float
    #: Share of ``[0, end_s]`` with no busy compute unit (repartition blackouts included).
    idle_share: float
    #: Repartitions started in each hour of the day, shape (24,).
    repartitions_per_hour: np.ndarray = field(repr=False)
    #: Seconds in each configuration per 4-hour interval, shape (6, len(configurations)).
    configuration_time_s: np.ndarray = field(repr=False)
    #: The GPU's configuration ids (as text), the columns of :attr:`configuration_time_s`.
    configurations: tuple[str, ...] = ()
    #: Jobs not completed when the day ended (0 for a day run to its end); ET refuses a day with any.
    unfinished_jobs: int = 0

    #: Scalar columns of :meth:`row`, in order.
    SCALARS = (
        "energy_j",
        "avg_tardiness_s",
        "max_tardiness_s",
        "jobs",
        "late_jobs",
        "preemptions",
        "repartitions",
        "decisions",
        "end_s",
        "idle_share",
    )

    @classmethod
    def from_run(cls, method: str, day: int, run: DayRun, gpu: MigGpu) -> DayResult:
        result: Any = run.result
        ids = gpu.configuration_ids
        busy = tuple(result.busy_time_s)
        end_s = float(result.end_s)
        return cls(
            method,
            day,
            **result.metrics(),
            decisions=len(run.decisions),
            end_s=end_s,
            idle_share=float(busy[0] / end_s) if busy and end_s > 0 else 0.0,
            repartitions_per_hour=repartitions_per_hour(run),
            configuration_time_s=configuration_time_s(run, ids),
            configurations=tuple(str(c) for c in ids),
            unfinished_jobs=int(result.unfinished_jobs),
        )

    def row(self) -> dict[str, Any]:
        """A result-store row: scalars, then the arrays as (nested) lists and the configuration ids."""
        return {
            "method": self.method,
            "day": self.day,
            **{name: getattr(self, name) for name in self.SCALARS},
            "repartitions_per_hour": [int(v) for v in self.repartitions_per_hour],
            "configuration_time_s": [[float(v) for v in block] for block in self.configuration_time_s],
            "configurations": list(self.configurations),
        }


def day_row(method: str, day: int, run: DayRun, gpu: MigGpu | None = None) -> dict[str, Any]:
    """:meth:`DayResult.row` of one run on ``gpu`` (default the A100-40GB)."""
    return DayResult.from_run(method, day, run, load_gpu(gpu)).row()


def evaluate_days(
    method: str,
    policy: RepartitionPolicy,
    days: Iterable[int],
    seed: int,
    spec: WorkloadSpec | None = None,
    *,
    stream: DayStream = DayStream.HELD_OUT,
    repartition_mode: RepartitionMode = "blackout",
    gpu: MigGpu | str | None = None,
    workers: int = 1,
    power_curve: str | None = None,
    power_cap: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[DayResult]:
    """``policy`` on days ``days`` of ``stream`` (default: held-out) of ``seed``; ``spec`` defaults to the
    Fig. 5 profile at multiplier 1, ``gpu`` to the A100-40GB; ``power_curve`` and ``power_cap`` are the
    simulator's (:class:`~wattsched.mig.simulator.MigSimulation`).

    ``workers`` > 1 runs the days in that many spawned processes, each day with a copy of ``policy`` (it
    must pickle; the policies here do): the results are the same, in ``days`` order, since a policy is reset
    with the day's index before each day. ``progress`` is called with the number of days done so far after
    each day."""
    spec = spec or WorkloadSpec(profile="alibaba-day")
    resolved = load_gpu(gpu)
    days = list(days)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers > 1 and len(days) > 1:
        return _evaluate_in_processes(
            method,
            policy,
            days,
            seed,
            spec,
            stream,
            repartition_mode,
            resolved,
            workers,
            power_curve,
            power_cap,
            progress,
        )
    results = []
    for day in days:
        jobs = generate_jobs(spec, day_seed(seed, stream, day))
        run = run_day(
            jobs,
            policy,
            horizon_s=spec.horizon_s,
            repartition_mode=repartition_mode,
            seed=day,
            gpu=resolved,
            power_curve=power_curve,
            power_cap=power_cap,
        )
        results.append(DayResult.from_run(method, day, run, resolved))
        if progress is not None:
            progress(len(results))
    return results


def _evaluate_in_processes(
    method: str,
    policy: RepartitionPolicy,
    days: list[int],
    seed: int,
    spec: WorkloadSpec,
    stream: DayStream,
    repartition_mode: RepartitionMode,
    gpu: MigGpu,
    workers: int,
    power_curve: str | None,
    power_cap: bool,
    progress: Callable[[int], None] | None,
) -> list[DayResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold torch threads
    by_day: dict[int, DayResult] = {}
    with ProcessPoolExecutor(min(workers, len(days)), mp_context=context) as pool:
        # one task a day: a free worker takes the next day, so busy and quiet days balance themselves
        futures = [
            pool.submit(
                _evaluate_chunk,
                method,
                policy,
                [day],
                seed,
                spec,
                stream,
                repartition_mode,
                gpu,
                power_curve,
                power_cap,
            )
            for day in days
        ]
        for future in as_completed(futures):
            for result in future.result():
                by_day[result.day] = result
            if progress is not None:
                progress(len(by_day))
    return [by_day[d] for d in days]


def _evaluate_chunk(
    method: str,
    policy: RepartitionPolicy,
    days: list[int],
    seed: int,
    spec: WorkloadSpec,
    stream: DayStream,
    repartition_mode: RepartitionMode,
    gpu: MigGpu,
    power_curve: str | None,
    power_cap: bool,
) -> list[DayResult]:
    """Process-pool entry: the days of one task (one day each, from ``_evaluate_in_processes``)."""
    return evaluate_days(
        method,
        policy,
        days,
        seed,
        spec,
        stream=stream,
        repartition_mode=repartition_mode,
        gpu=gpu,
        power_curve=power_curve,
        power_cap=power_cap,
    )


def evaluate_policy(
    method: str,
    policy: RepartitionPolicy,
    days: Iterable[int],
    seed: int,
    spec: WorkloadSpec | None = None,
    *,
    held_out: bool = True,
    repartition_mode: RepartitionMode = "blackout",
    gpu: MigGpu | str | None = None,
    workers: int = 1,
    power_curve: str | None = None,
    power_cap: bool = False,
) -> list[dict[str, Any]]:
    """Rows (:meth:`DayResult.row`) of ``policy`` on held-out (or training-stream) days ``days``
    (``workers``, ``power_curve``, ``power_cap``: see :func:`evaluate_days`)."""
    stream = DayStream.HELD_OUT if held_out else DayStream.TRAINING
    results = evaluate_days(
        method,
        policy,
        days,
        seed,
        spec,
        stream=stream,
        repartition_mode=repartition_mode,
        gpu=gpu,
        workers=workers,
        power_curve=power_curve,
        power_cap=power_cap,
    )
    return [r.row() for r in results]


def et_by_method(
    rows: Sequence[dict[str, Any] | DayResult], pool: Sequence[str], a: float | None = None
) -> tuple[dict[str, float], float]:
    """Mean ET per method with ``a`` pooled over the methods in ``pool`` (docs/concepts/et.md) unless
    given."""
    from wattsched.metrics import et_coefficient, et_values, require_finished

    def get(row: dict[str, Any] | DayResult, key: str) -> Any:
        return getattr(row, key) if isinstance(row, DayResult) else row[key]

    energy = np.asarray([get(r, "energy_j") for r in rows], dtype=np.float64)
    tardiness = np.asarray([get(r, "avg_tardiness_s") for r in rows], dtype=np.float64)
    methods = np.asarray([get(r, "method") for r in rows])
    unfinished = [
        r.unfinished_jobs if isinstance(r, DayResult) else r.get("unfinished_jobs", 0) for r in rows
    ]
    require_finished(unfinished)  # a day with unfinished jobs has no ET
    if a is None:
        mask = np.isin(methods, list(pool))
        a = float(et_coefficient(energy[mask], tardiness[mask]))
    values = np.asarray(et_values(energy, tardiness, a), dtype=np.float64)
    return {m: float(values[methods == m].mean()) for m in dict.fromkeys(methods.tolist())}, a


#: The methods whose pilot runs set ET's ``a``: the benchmarks, in the GPU's roles.
PILOT_METHODS = ("no-mig", "static", "day-night")


@cache
def pilot_et_coefficient(
    seed: int, days: int = 8, spec: WorkloadSpec | None = None, gpu: MigGpu | str | None = None
) -> float:
    """ET's ``a`` per joule pooled over pilot runs of no-mig, static and day-night (the GPU's "static",
    "day" and "night" roles) on ``days`` pilot days of ``spec`` (default: Fig. 5 profile at multiplier 1)."""
    pilot = range(days)
    results: list[DayResult] = []
    for name, policy in (
        ("no-mig", NoMigPartitioner()),
        ("static", StaticPartitioner()),
        ("day-night", DayNightPartitioner()),
    ):
        results += evaluate_days(name, policy, pilot, seed, spec, stream=DayStream.PILOT, gpu=gpu)
    return et_by_method(results, PILOT_METHODS)[1]


@cache
def select_static(
    seed: int, days: int, spec: WorkloadSpec | None = None, gpu: MigGpu | str | None = None
) -> tuple[int | str, tuple[float, ...]]:
    """P1's static choice: the configuration with the lowest ET (``a`` pooled over all of them) on ``days``
    selection days. Returns the chosen id and the ET of each of the GPU's configurations, in their order."""
    resolved = load_gpu(gpu)
    configurations = resolved.configuration_ids
    results: list[DayResult] = []
    for config in configurations:
        results += evaluate_days(
            str(config),
            StaticPartitioner(config),
            range(days),
            seed,
            spec,
            stream=DayStream.SELECTION,
            gpu=resolved,
        )
    ets, _ = et_by_method(results, [str(c) for c in configurations])
    values = tuple(ets[str(c)] for c in configurations)
    return configurations[int(np.argmin(values))], values
