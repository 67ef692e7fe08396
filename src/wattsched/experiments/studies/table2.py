"""P1's in-configuration study: Table II and Figs. 4, 6-10 (papers.md §A.7.1).

A cell is one (condition, iteration): its job queue is generated once, from a seed that depends only on
(study seed, condition, iteration), and every policy runs on every configuration with that same queue
(common random numbers). A cell returns one row per (policy, configuration).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from wattsched.errors import ConfigError
from wattsched.experiments.grid import GridConfig, load_grid_config, queue_seed, validate_grid_config
from wattsched.experiments.study import STUDIES, Row, Scale

__all__ = ["BUSY_COLUMNS", "Table2Cell", "Table2Study", "run_queue"]

#: Seconds spent with u = 0..7 busy compute units, one column per level.
BUSY_COLUMNS: tuple[str, ...] = tuple(f"busy_time_u{u}_s" for u in range(8))


@dataclass(frozen=True)
class Table2Cell:
    """One job queue and everything needed to simulate it under every policy and configuration."""

    condition: str
    rate_per_min: float
    inference_share: float
    hours: float
    iteration: int
    seed: int
    policies: tuple[str, ...]
    configurations: tuple[int | str, ...]

    @property
    def key(self) -> str:
        return f"{self.condition}/i{self.iteration:04d}"


def run_queue(cell: Table2Cell) -> list[Row]:
    """Simulate the cell's queue under each policy × configuration (pure function of the cell)."""
    from wattsched.mig.simulator import simulate
    from wattsched.workload.generators import WorkloadSpec, generate_jobs
    from wattsched.workload.job import JobKind

    spec = WorkloadSpec(
        rate_per_min=cell.rate_per_min, hours=cell.hours, inference_share=cell.inference_share
    )
    jobs = generate_jobs(spec, cell.seed)
    inference_jobs = sum(1 for job in jobs if job.kind == JobKind.INFERENCE)
    rows: list[Row] = []
    for policy in cell.policies:
        for configuration in cell.configurations:
            result = simulate(jobs, configuration, policy, horizon_s=spec.horizon_s)
            row: Row = {
                "condition": cell.condition,
                "iteration": cell.iteration,
                "seed": cell.seed,
                "policy": policy,
                "config": str(configuration),
                "energy_j": float(result.energy_j),
                "avg_tardiness_s": float(result.avg_tardiness_s),
                "max_tardiness_s": float(result.max_tardiness_s),
                "late_jobs": int(result.late_jobs),
                "late_inference_jobs": int(result.late_inference_jobs),
                "inference_jobs": inference_jobs,
                "jobs": int(result.jobs),
                "preemptions": int(result.preemptions),
                "end_s": float(result.end_s),
            }
            busy = tuple(result.busy_time_s) + (0.0,) * (len(BUSY_COLUMNS) - len(result.busy_time_s))
            row.update({column: float(t) for column, t in zip(BUSY_COLUMNS, busy, strict=False)})
            rows.append(row)
    return rows


class Table2Study:
    """The in-configuration study, configured by ``studies/table2.toml`` (or a given :class:`GridConfig`).

    Options (also ``wattsched reproduce --study-option table2.KEY=VALUE``): ``iterations`` (per condition,
    overrides the scale), ``hours``, ``policies``, ``configurations``, ``conditions`` (names to keep).
    """

    name = "table2"

    def __init__(
        self,
        config: GridConfig | None = None,
        *,
        iterations: int | None = None,
        hours: float | None = None,
        policies: list[str] | None = None,
        configurations: list[int | str] | None = None,
        conditions: list[str] | None = None,
    ) -> None:
        base = config if config is not None else load_grid_config("table2")
        data = base.model_dump()
        if hours is not None:
            data["hours"] = hours
        if policies is not None:
            data["policies"] = policies
        if configurations is not None:
            data["configurations"] = configurations
        if conditions is not None:
            unknown = set(conditions) - {c.name for c in base.conditions}
            if unknown:
                raise ConfigError(f"unknown table2 conditions {sorted(unknown)}")
            data["conditions"] = [c for c in data["conditions"] if c["name"] in conditions]
            if base.default_condition not in conditions:
                data["default_condition"] = conditions[0]
        self.config = validate_grid_config(data, "table2 options")
        self.iterations = iterations
        from wattsched.mig.policies import POLICIES

        for policy in self.config.policies:
            if policy not in POLICIES:
                raise ConfigError(f"unknown policy '{policy}'; valid: {', '.join(POLICIES.available())}")

    def cells(self, scale: Scale) -> list[Table2Cell]:
        count = self.config.iterations_for(scale, self.iterations)
        return [
            Table2Cell(
                condition=condition.name,
                rate_per_min=condition.rate_per_min,
                inference_share=condition.inference_share,
                hours=self.config.hours,
                iteration=iteration,
                seed=queue_seed(self.config.seed, condition.name, iteration),
                policies=self.config.policies,
                configurations=self.config.configurations,
            )
            for condition in self.config.conditions
            for iteration in range(count)
        ]

    def run_cell(self, cell: Table2Cell) -> list[Row]:
        return run_queue(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        from wattsched.experiments.studies.table2_analysis import summarize

        return summarize(rows, self.config)

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        from wattsched.experiments.studies.table2_report import report

        return report(rows, self.config, figures_dir)


STUDIES.register("table2")(Table2Study)
