"""Evaluate repartitioning policies on common held-out days and score them with ET (Table III machinery).

Every method sees the same generated days (common random numbers). A day's result becomes one flat row:
energy, tardiness, repartitions, repartitions per hour of day (``rep_h00``..``rep_h23``) and seconds spent
in each
configuration per 4-hour interval (``cfg_b<interval>_c<config>``, Fig. 11).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    "day_row",
    "et_by_method",
    "evaluate_policy",
    "pilot_et_coefficient",
    "select_static",
]

FIG11_INTERVALS = 6
#: Pilot and static-selection days are training days from this index on (the DQN trains on days 0, 1, ...
#: of its own seed; the offset keeps the pilot days out of its first million episodes).
PILOT_DAY_OFFSET = 1_000_000


def day_row(method: str, day: int, run: DayRun, gpu: MigGpu | None = None) -> dict[str, Any]:
    """One flat row per (method, day); configuration columns for every configuration of ``gpu`` (default the
    A100-40GB)."""
    configurations = load_gpu(gpu).configuration_ids
    result: Any = run.result
    row: dict[str, Any] = {
        "method": method,
        "day": day,
        **result.metrics(),
        "decisions": len(run.decisions),
    }
    for hour, count in enumerate(repartitions_per_hour(run)):
        row[f"rep_h{hour:02d}"] = int(count)
    table = configuration_time_s(run, configurations)
    for block in range(FIG11_INTERVALS):
        for column, config in enumerate(configurations):
            row[f"cfg_b{block}_c{config:02d}"] = float(table[block, column])
    return row


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
) -> list[dict[str, Any]]:
    """Rows of ``policy`` on held-out (or training) days ``days`` of ``seed`` on ``gpu``."""
    spec = spec or WorkloadSpec(profile="alibaba-day")
    resolved = load_gpu(gpu)
    rows = []
    for day in days:
        day_seed = held_out_day(seed, day) if held_out else training_day(seed, day)
        jobs = generate_jobs(spec, day_seed)
        run = run_day(
            jobs, policy, horizon_s=spec.horizon_s, repartition_mode=repartition_mode, seed=day, gpu=resolved
        )
        rows.append(day_row(method, day, run, resolved))
    return rows


def et_by_method(
    rows: Sequence[dict[str, Any]], pool: Sequence[str], a: float | None = None
) -> tuple[dict[str, float], float]:
    """Mean ET per method with ``a`` pooled over the methods in ``pool`` (CONTRACT §2), and that ``a``."""
    from wattsched.metrics import et_coefficient, et_values

    energy = np.asarray([r["energy_j"] for r in rows], dtype=np.float64)
    tardiness = np.asarray([r["avg_tardiness_s"] for r in rows], dtype=np.float64)
    methods = np.asarray([r["method"] for r in rows])
    if a is None:
        mask = np.isin(methods, list(pool))
        a = float(et_coefficient(energy[mask], tardiness[mask]))
    values = np.asarray(et_values(energy, tardiness, a), dtype=np.float64)
    return {m: float(values[methods == m].mean()) for m in dict.fromkeys(methods.tolist())}, a


@cache
def pilot_et_coefficient(
    seed: int, days: int = 8, spec: WorkloadSpec | None = None, gpu: MigGpu | str | None = None
) -> float:
    """ET's ``a`` from pilot runs of the benchmark methods (no-mig, static and day-night in the GPU's roles:
    P1's cfg 3 and 6/2 on the A100-40GB) on training days."""
    pilot_days = range(PILOT_DAY_OFFSET, PILOT_DAY_OFFSET + days)
    rows: list[dict[str, Any]] = []
    for name, policy in (
        ("no-mig", NoMigPartitioner()),
        ("static", StaticPartitioner()),
        ("day-night", DayNightPartitioner()),
    ):
        rows += evaluate_policy(name, policy, pilot_days, seed, spec, held_out=False, gpu=gpu)
    return et_by_method(rows, ("no-mig", "static", "day-night"))[1]


@cache
def select_static(
    seed: int, days: int, spec: WorkloadSpec | None = None, gpu: MigGpu | str | None = None
) -> tuple[int | str, tuple[float, ...]]:
    """P1's static choice: the configuration with the lowest ET over ``days`` training days (pooled ``a``).

    Returns the chosen configuration and the ET of each of the GPU's configurations (in their order).
    """
    resolved = load_gpu(gpu)
    configurations = resolved.configuration_ids
    selection_days = range(PILOT_DAY_OFFSET + 1000, PILOT_DAY_OFFSET + 1000 + days)
    rows: list[dict[str, Any]] = []
    for config in configurations:
        rows += evaluate_policy(
            f"cfg{config}",
            StaticPartitioner(config),
            selection_days,
            seed,
            spec,
            held_out=False,
            gpu=resolved,
        )
    ets, _ = et_by_method(rows, [f"cfg{c}" for c in configurations])
    values = tuple(ets[f"cfg{c}"] for c in configurations)
    return configurations[int(np.argmin(values))], values
