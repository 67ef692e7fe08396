"""A sweep directory as figures read it: ``DIR/runs.parquet`` (one row per run) and ``DIR/sweep.json``.

docs/howto/sweep.md: ``runs.parquet`` has at least ``gpu, configuration, policy, seed, energy_j,
avg_tardiness_s, late_jobs, preemptions, et``; ``partitioner``, ``workload`` and ``rate_multiplier`` may also
appear. Figures group runs by the factor columns that vary (:data:`FACTOR_COLUMNS`, in that order of
preference for the x axis); seeds are the replicates behind each interval.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wattsched.errors import InputError
from wattsched.io import cell_text, numeric_column, read_table
from wattsched.schemas import SWEEP_RUN_COLUMNS
from wattsched.viz.stats import METRICS, Metric, varying_columns

__all__ = ["FACTOR_COLUMNS", "REQUIRED_COLUMNS", "Sweep", "is_sweep_dir", "read_sweep", "split_factors"]

RUNS_FILE, POOL_FILE = "runs.parquet", "sweep.json"
REQUIRED_COLUMNS: tuple[str, ...] = SWEEP_RUN_COLUMNS
#: Columns that tell runs apart (besides the seed), in order of preference for the x axis.
FACTOR_COLUMNS: tuple[str, ...] = (
    "policy",
    "configuration",
    "partitioner",
    "gpu",
    "workload",
    "rate_multiplier",
)
_NUMERIC = ("seed", "energy_j", "avg_tardiness_s", "late_jobs", "preemptions", "et")


@dataclass(frozen=True)
class Sweep:
    """The runs of a sweep, its ET pool (``sweep.json``, empty if absent) and where they came from."""

    path: Path
    runs: pd.DataFrame
    pool: dict[str, Any]

    @property
    def factors(self) -> list[str]:
        """The factor columns that take more than one value."""
        return varying_columns(self.runs, FACTOR_COLUMNS)

    def metrics(self) -> list[Metric]:
        """The :data:`~wattsched.viz.stats.METRICS` whose column the runs have."""
        return [m for m in METRICS.values() if m.column in self.runs.columns]


def is_sweep_dir(path: str | Path) -> bool:
    return (Path(path) / RUNS_FILE).is_file()


def read_sweep(path: str | Path) -> Sweep:
    """Read and check a sweep directory; any problem is one InputError naming the file, row and column."""
    folder = Path(path)
    runs_path = folder / RUNS_FILE
    if not folder.is_dir():
        raise InputError("not a directory", path=str(folder))
    if not runs_path.is_file():
        raise InputError(f"not a sweep directory: no {RUNS_FILE}", path=str(folder))
    runs = read_table(runs_path, formats=("parquet",))
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} (docs/howto/sweep.md)", path=str(runs_path))
    if runs.empty:
        raise InputError("the sweep has no runs", path=str(runs_path))
    runs = runs.reset_index(drop=True).copy()
    for column in _NUMERIC:
        values, bad = numeric_column(runs, column)
        if bad is not None:
            raise InputError(
                f"not a finite number: {cell_text(runs, column, bad)}",
                path=str(runs_path),
                row=bad + 1,
                column=column,
            )
        runs[column] = values
    negative = np.flatnonzero((runs["energy_j"] < 0) | (runs["avg_tardiness_s"] < 0))
    if negative.size:
        column = "energy_j" if runs["energy_j"].iloc[int(negative[0])] < 0 else "avg_tardiness_s"
        raise InputError(
            f"must be >= 0, got {cell_text(runs, column, int(negative[0]))}",
            path=str(runs_path),
            row=int(negative[0]) + 1,
            column=column,
        )
    for column in FACTOR_COLUMNS:  # factors group as text; numbers shown as 2.5, not 2.500000
        if column in runs.columns:
            runs[column] = [f"{v:g}" if isinstance(v, float) else str(v) for v in runs[column].tolist()]
    return Sweep(folder, runs, _read_pool(folder / POOL_FILE))


def _read_pool(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        pool = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda name: math.nan)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read the ET pool: {type(exc).__name__}: {exc}", path=str(path)) from None
    if not isinstance(pool, dict):
        raise InputError("the ET pool must be a JSON object", path=str(path))
    return pool


def split_factors(factors: list[str]) -> tuple[str | None, list[str]]:
    """The x-axis factor (the first that varies) and the rest, which become bar colours."""
    return (factors[0], factors[1:]) if factors else (None, [])
